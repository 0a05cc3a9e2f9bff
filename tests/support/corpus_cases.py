"""Bad case and settings files for the bad-input corpus (tests/cli/test_bad_inputs.py merges ``CORPUS``).

``BAD_CASES`` is shared with tests/cases/test_case_input.py, which checks that ``cases validate`` reports
each of them the same way ``simulate --case`` refuses it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
GOOD = CASE.read_text()
GOOD_DATA = {"id": "json-case", "question": "What is it?", "presentation": "A 40-year-old with a cough."}

Builder = Callable[[Path], tuple[list[str], str]]


def case_file(tmp: Path, text: str | bytes, name: str = "case.yaml") -> Path:
    path = tmp / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def alias_bomb(levels: int = 9, indent: str = "  ") -> str:
    """A "billion laughs": nine aliases of nine aliases ... expand to 9**levels values, written in ~1 KB."""
    lines = [f"{indent}l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"{indent}l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def with_metadata(extra: str) -> str:
    """The good YAML case with ``extra`` (indented lines) added to its ``metadata`` mapping."""
    return GOOD.replace("metadata:\n", "metadata:\n" + extra, 1)


def json_case(metadata_text: str = "{}", extra: str = "") -> str:
    """A valid JSON case whose ``metadata`` is the given JSON text, with ``extra`` members appended."""
    head = json.dumps(GOOD_DATA)[:-1]
    return f'{head}, "metadata": {metadata_text}{extra}}}'


#: name -> (file name, content, what the one-line error must contain)
BAD_CASES: dict[str, tuple[str, str | bytes, str]] = {
    "case yaml alias bomb": ("case.yaml", with_metadata(alias_bomb()), "YAML aliases expand this file to more"),
    "case yaml alias of itself": ("case.yaml", with_metadata("  loop: &loop [*loop]\n"),
                                  "metadata.loop.0: a YAML alias refers to the value that contains it"),
    "case yaml aliases nest too deep": ("case.yaml", with_metadata(
        "  a: &a " + "[" * 40 + "]" * 40 + "\n  b: " + "[" * 40 + "*a" + "]" * 40 + "\n"),
        "nested more than 64 levels deep (once its YAML aliases are expanded)"),
    "case yaml duplicate key": ("case.yaml", GOOD + "question: Which one?\n", "question: duplicate key (set at lines"),
    "case yaml duplicate nested key": ("case.yaml", with_metadata("  author: someone else\n"),
                                       "metadata.author: duplicate key"),
    "case json duplicate key": ("case.json", json_case('{"a": 1, "a": 2}'), "metadata.a: duplicate key"),
    "case json duplicate top-level key": ("case.json", json_case(extra=', "question": "Again?"'),
                                          "question: duplicate key"),
    "case yaml nan": ("case.yaml", with_metadata("  score: .nan\n"), "metadata.score: nan is not a number"),
    "case yaml infinity": ("case.yaml", with_metadata("  score: [1.0, -.inf]\n"), "metadata.score.1: -inf"),
    "case json nan": ("case.json", json_case('{"score": NaN}'), "metadata.score: nan is not a number"),
    "case json infinity": ("case.json", json_case('{"score": Infinity}'), "metadata.score: inf is not a number"),
    "case json overflowing number": ("case.json", json_case('{"score": 1e999}'), "metadata.score: inf"),
    "case yaml lone surrogate": ("case.yaml", GOOD.replace("title: Young", 'title: "\\ud800 Young') .replace(
        "viral illness\n", 'viral illness"\n', 1), "title: text holds a lone surrogate (U+D800)"),
    "case json lone surrogate": ("case.json", json_case('{"note": ["ok", "\\udfff"]}'),
                                 "metadata.note.1: text holds a lone surrogate (U+DFFF)"),
    "case json lone surrogate key": ("case.json", json_case('{"\\ud83d": 1}'), "metadata: key '\\ud83d' holds"),
    "case yaml escaped nul": ("case.yaml", GOOD.replace("question: What is", 'question: "What\\0 is').replace(
        "confirm it?\n", 'confirm it?"\n', 1), "question: text holds a NUL character (U+0000)"),
    "case json escaped nul": ("case.json", json_case('{"a": "x\\u0000y"}'), "metadata.a: text holds a NUL character"),
    "case yaml raw nul": ("case.yaml", GOOD.replace("MIT", "M\0IT"), "holds a NUL character (U+0000)"),
    "case json raw nul": ("case.json", json_case('{"a": "x\0y"}'), "line 1 holds a NUL character (U+0000)"),
    "case json nested 100 deep": ("case.json", json_case("[" * 100 + "]" * 100),
                                  "metadata.0.0.0...: nested more than 64 levels deep"),
    "case json nested 100000 deep": ("case.json", json_case("[" * 100_000 + "]" * 100_000),
                                     "nested more than 64 levels deep"),
    "case yaml nested 100000 deep": ("case.yaml", with_metadata("  deep: " + "[" * 100_000 + "]" * 100_000 + "\n"),
                                     "nested more than 64 levels deep"),
    # One leading BOM is skipped by both readers, so the problem reported is the case's own.
    "case json with bom": ("case.json", "\ufeff" + json.dumps({"id": "x", "presentation": "p"}),
                           "question: required field is missing"),
    "case yaml with bom": ("case.yaml", "\ufeffid: x\npresentation: p\n", "question: required field is missing"),
}


def _bad_case(name: str) -> Builder:
    file_name, content, expected = BAD_CASES[name]
    # A scripted model that does not exist: code that wrongly accepted the case still stops at once.
    return lambda t: (["simulate", "--case", str(case_file(t, content, file_name)), "--model", "scripted:x.json"],
                      expected)


def _folder(tmp: Path, files: dict[str, str]) -> Path:
    folder = tmp / "cases"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _with_config(tmp: Path, text: str, name: str) -> list[str]:
    return ["simulate", "--case", str(CASE), "--model", "scripted:x.json", "--config", str(case_file(tmp, text, name))]


def _osce() -> str:
    return json.dumps({"Objective_for_Doctor": "Diagnose", "Patient_Actor": {"History": "Cough"},
                       "Correct_Diagnosis": "Flu"})


CORPUS: dict[str, Builder] = {name: _bad_case(name) for name in BAD_CASES}
CORPUS.update({
    # Settings files go through the same strict reader (consilium/datafiles/).
    "run config duplicate key": lambda t: (_with_config(t, "max_rounds: 3\nmax_rounds: 4\n", "c.yaml"),
                                           "c.yaml: max_rounds: duplicate key (set at lines 1 and 2)"),
    "run config nan": lambda t: (_with_config(t, '{"max_rounds": NaN}', "c.json"),
                                 "c.json: max_rounds: nan is not a number"),
    "run config alias bomb": lambda t: (_with_config(t, "x:\n" + alias_bomb(), "c.yaml"),
                                        "c.yaml: YAML aliases expand this file to more"),
    "run config nested 100000 deep": lambda t: (_with_config(t, "[" * 100_000 + "]" * 100_000, "c.json"),
                                                "c.json: nested more than 64 levels deep"),
    "model config duplicate key": lambda t: (["models", "check", "--model-config", str(case_file(
        t, "spec: scripted:a.yaml\nspec: scripted:b.yaml\n", "m.yaml"))], "m.yaml: spec: duplicate key"),
    "model config infinity": lambda t: (["models", "check", "--model-config", str(case_file(
        t, "spec: scripted:a.yaml\ntimeout_s: .inf\n", "m.yaml"))], "m.yaml: timeout_s: inf is not a number"),
    "model config lone surrogate": lambda t: (["models", "check", "--model-config", str(case_file(
        t, '{"spec": "scripted:\\ud800.yaml"}', "M.JSON"))], "M.JSON: spec: text holds a lone surrogate"),
    "script duplicate key": lambda t: (["models", "check", "--model", "scripted:" + str(case_file(
        t, '{"rules": [{"stage": "opinion", "stage": "vote", "response": "x"}]}', "s.json"))],
        "s.json: rules.0.stage: duplicate key"),
    "script alias bomb": lambda t: (["models", "check", "--model", "scripted:" + str(case_file(
        t, "rules: []\nx:\n" + alias_bomb(), "s.yaml"))], "s.yaml: YAML aliases expand"),
    # AgentClinic JSONL lines are case records too.
    "agentclinic line duplicate key": lambda t: (["cases", "import", "agentclinic", str(case_file(
        t, '{"OSCE_Examination": ' + _osce()[:-1] + ', "Correct_Diagnosis": "Cold"}}\n', "a.jsonl")),
        "--out", str(t / "imported")], "a.jsonl: line 1: OSCE_Examination.Correct_Diagnosis: duplicate key"),
    "agentclinic line lone surrogate": lambda t: (["cases", "import", "agentclinic", str(case_file(
        t, '{"OSCE_Examination": ' + _osce().replace('"Flu"', '"Flu \\udc00"') + "}\n", "a.jsonl")),
        "--out", str(t / "imported")],
        "a.jsonl: line 1: OSCE_Examination.Correct_Diagnosis: text holds a lone surrogate"),
    "agentclinic line nan": lambda t: (["cases", "import", "agentclinic", str(case_file(
        t, '{"OSCE_Examination": ' + _osce()[:-1] + ', "Test_Results": {"Hb": NaN}}}\n', "a.jsonl")),
        "--out", str(t / "imported")], "a.jsonl: line 1: OSCE_Examination.Test_Results.Hb: nan"),
    # One rule for which files are cases: an upper-case suffix is a case file for cohort too.
    "cohort upper-case case file": lambda t: (["cohort", "--cases", str(_folder(t, {"CASE.YAML": "id: x\n"})),
                                               "--model", "scripted:x.json"], "CASE.YAML: question"),
    "cohort case in a subfolder": lambda t: (["cohort", "--cases", str(_folder(t, {
        "a.yaml": GOOD, "more/b.yml": "id: y\n"})), "--model", "scripted:x.json"], "b.yml: question"),
})
