"""Bad ``reference.answers`` lists for the bad-input corpus (tests/cli/test_bad_inputs.py merges ``CORPUS``):
each is one line naming the case file and the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOOD = (ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml").read_text()

Builder = Callable[[Path], tuple[list[str], str]]


def _case(tmp: Path, answers: str) -> str:
    """The tumor-board case with ``answers`` (indented YAML) added to its reference."""
    path = tmp / "case.yaml"
    path.write_text(GOOD.replace("reference:\n", "reference:\n" + answers, 1))
    return str(path)


def _turn(answers: str, expected: str) -> Builder:
    return lambda t: (["turn", "--case", _case(t, answers), "--role", "Medical oncologist", "--question", "Adjuvant?",
                       "--model", "scripted:x.json"], expected)


CORPUS: dict[str, Builder] = {
    "reference answers not a list": _turn("  answers: Three years of osimertinib.\n",
                                          "case.yaml: reference.answers: Input should be a valid list"),
    "reference answer without its answer": _turn("  answers:\n    - question: Adjuvant?\n",
                                                 "case.yaml: reference.answers.0.answer: required field is missing"),
    "reference answer blank": _turn("  answers:\n    - {question: 'Adjuvant?', answer: '  '}\n",
                                    "case.yaml: reference.answers.0.answer: must not be empty"),
    "reference answer unknown key": _turn("  answers:\n    - {question: 'Adjuvant?', answer: 'Yes.', by: MO}\n",
                                          "case.yaml: reference.answers.0.by: unknown field"),
    "reference answers repeat a question to one role": _turn(
        "  answers:\n    - {question: 'Adjuvant?', answer: 'Yes.', role: MO}\n"
        "    - {question: 'adjuvant?', answer: 'No.', role: mo}\n",
        "case.yaml: reference.answers: answers 0 and 1 are for the same question to MO"),
    "reference answers repeat a question": _turn(
        "  answers:\n    - {question: 'Adjuvant?', answer: 'Yes.'}\n    - {question: '  ADJUVANT? ', answer: 'No.'}\n",
        "case.yaml: reference.answers: answers 0 and 1 are for the same question"),
}
