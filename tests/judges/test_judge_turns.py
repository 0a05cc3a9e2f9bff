"""The Specialist Turn judge sees the turn's question and target role and judges against the case's
reference answer to that question; ROUGE-L compares with that answer
(opentumorboard.txt §2.4 L58, App. C.1 L170)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from consilium.cli import main
from consilium.judges.record import Judgement

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"

# Words chosen so that no two distinct ones share a Porter stem: ROUGE-L over stems is then ROUGE-L
# over the lower-cased words, which the test computes itself.
ANSWERS = [{"question": "Should she receive adjuvant therapy after lobectomy?",
            "answer": "Yes: platinum doublet chemotherapy then osimertinib for three years."},
           {"question": "Is brain MRI needed before surgery?",
            "answer": "Brain MRI is mandatory before any resection here."}]
TURN_ANSWERS = {"lobectomy": "Osimertinib for three years after platinum doublet chemotherapy.",
                "MRI": "Yes, brain MRI before resection is mandatory.",
                "trial": "No trial is open for her."}
JUDGE = {"model": "j", "rules": [{"stage": "judge", "json": {
    "rationale": "r", "score": 4, "critical_error": False, "unsupported_claim": False}}]}


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data))
    return path


def turns(tmp_path: Path) -> Path:
    """Three turns of one case: two whose questions the case answers (one written with other case and
    spacing), one it does not."""
    case = yaml.safe_load(CASE.read_text())
    case["reference"]["answers"] = ANSWERS
    case_file = write(tmp_path, "case.yaml", case)
    panel = write(tmp_path, "turn.json", {"rules": [
        {"stage": "specialist_turn", "contains": key, "json": {"answer": answer}}
        for key, answer in TURN_ANSWERS.items()]})
    out = tmp_path / "runs"
    for role, question in [("Medical oncologist", "Should she receive   ADJUVANT therapy after lobectomy?"),
                           ("Neuroradiologist", "Is brain MRI needed before surgery?"),
                           ("Thoracic surgeon", "Is a clinical trial open for her?")]:
        assert main(["turn", "--case", str(case_file), "--model", f"scripted:{panel}", "--role", role,
                     "--question", question, "--out", str(out)]) == 0
    return out


def judged(tmp_path: Path, out: Path, *extra: str, rc: int = 0) -> dict[str, Judgement]:
    assert main(["judge", str(out), "--rubric", "otb-clinical-equivalence", "--judge-model",
                 f"scripted:{write(tmp_path, 'judge.json', JUDGE)}", *extra]) == rc
    records = [Judgement.model_validate_json(p.read_text()) for p in out.rglob("*.judge.otb-clinical-equivalence.json")]
    questions = {t["run_id"]: t["question"] for t in (json.loads(p.read_text()) for p in out.rglob("*.trace.json"))}
    return {questions[r.trace_run_id]: r for r in records}


def section(user: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", user, re.DOTALL)
    assert match, tag
    return match.group(1)


def rouge_l_f1(reference: str, candidate: str) -> float:
    """ROUGE-L F1 from a longest common subsequence of lower-cased alphanumeric words."""
    ref, cand = (re.findall(r"[a-z0-9]+", text.lower()) for text in (reference, candidate))
    table = [[0] * (len(cand) + 1) for _ in range(len(ref) + 1)]
    for i, a in enumerate(ref):
        for j, b in enumerate(cand):
            table[i + 1][j + 1] = table[i][j] + 1 if a == b else max(table[i][j + 1], table[i + 1][j])
    lcs = table[-1][-1]
    precision, recall = lcs / len(cand), lcs / len(ref)
    return 2 * precision * recall / (precision + recall) if lcs else 0.0


def test_the_judge_gets_question_role_and_the_reference_answer_to_that_question(tmp_path: Path) -> None:
    records = judged(tmp_path, turns(tmp_path))  # the third turn alone not evaluable: exit 0
    adjuvant = records["Should she receive   ADJUVANT therapy after lobectomy?"]
    mri = records["Is brain MRI needed before surgery?"]
    for record, question, role, answer in [
            (adjuvant, "Should she receive   ADJUVANT therapy after lobectomy?", "Medical oncologist", ANSWERS[0]),
            (mri, "Is brain MRI needed before surgery?", "Neuroradiologist", ANSWERS[1])]:
        [call] = record.calls
        # the authors' layout (consilium/judges/otb_layout.py): the data alone, the task in the system message
        user = call.messages[-1].content
        assert section(user, "QUESTION") == question and section(user, "TARGET_SPECIALIST_ROLE") == role
        assert section(user, "REFERENCE_EXPERT_ANSWER") == answer["answer"]  # this question's, not the other's
        assert "<QUESTION>" in call.messages[0].content and "<task>" not in user
        assert record.items[0].score == 4.0 and record.items[0].detail["reference_answer"].startswith(
            "reference.answers.")
    assert adjuvant.items[0].detail["reference_answer"] == "reference.answers.0"
    assert mri.items[0].detail["reference_answer"] == "reference.answers.1"


def test_rouge_l_of_a_turn_compares_with_its_reference_answer(tmp_path: Path) -> None:
    records = judged(tmp_path, turns(tmp_path))
    for question, key, answer in [("Should she receive   ADJUVANT therapy after lobectomy?", "lobectomy", ANSWERS[0]),
                                  ("Is brain MRI needed before surgery?", "MRI", ANSWERS[1])]:
        rouge = records[question].overlap["rouge_l"]
        assert rouge["against"] == f"reference.answers.{ANSWERS.index(answer)}"
        assert abs(rouge["f1"] - rouge_l_f1(answer["answer"], TURN_ANSWERS[key])) < 1e-6
        assert records[question].overlap["semantic_similarity"]["against"] == rouge["against"]


def test_a_turn_without_a_reference_answer_is_not_evaluable_unless_one_is_given(tmp_path: Path) -> None:
    out = turns(tmp_path)
    trial = judged(tmp_path, out)["Is a clinical trial open for her?"]
    [item] = trial.items
    assert item.not_evaluable and item.score is None and not trial.calls
    assert item.reason == ("the case has no reference answer to this turn's question put to this role (none "
                           "of the 2 in reference.answers matches it, ignoring case and spacing; "
                           "--reference-answer stands in only for a case without reference.answers)")
    assert trial.overlap == {}  # never against the board's conclusion
    # --reference-answer never stands in for a case that lists its answers: the turn stays not evaluable
    # (it would be judged against an answer to another question); the case's own answers still apply
    records = judged(tmp_path, out, "--reference-answer", "No trial is open; revisit at recurrence.")
    trial = records["Is a clinical trial open for her?"]
    assert trial.items[0].not_evaluable and not trial.calls and trial.overlap == {}
    assert records["Is brain MRI needed before surgery?"].items[0].detail["reference_answer"] == "reference.answers.1"


def test_one_question_put_to_two_roles_is_judged_against_each_roles_answer() -> None:
    """An answer naming a role matches only a turn put to that role (by label or catalogue category),
    before an answer naming none; the same question may have one answer per role."""
    from consilium.cases import Reference

    reference = Reference.model_validate({"answers": [
        {"question": "Operable?", "answer": "Yes, by lobectomy.", "role": "Thoracic surgeon"},
        {"question": "Operable?", "answer": "Only after restaging.", "role": "radiology"},
        {"question": "operable?  ", "answer": "Ask the board."}]})
    assert reference.answer_to("Operable?", "Thoracic Surgeon", "surgery") == (0, "Yes, by lobectomy.")
    assert reference.answer_to("Operable?", "Neuroradiologist", "radiology") == (1, "Only after restaging.")
    assert reference.answer_to("OPERABLE?", "Medical oncologist", "medical-oncology") == (2, "Ask the board.")
    assert reference.answer_to("Resectable?", "Thoracic surgeon", "surgery") is None


def test_question_and_role_reach_the_judge_and_rouge_l_uses_the_given_answer(tmp_path: Path) -> None:
    """A case without ``answers`` and ``--reference-answer``: the judge still gets the turn's question and
    role, and ROUGE-L compares with the given answer, not with the board's conclusion."""
    panel = write(tmp_path, "turn.json", {"rules": [{"stage": "specialist_turn", "json": {
        "answer": TURN_ANSWERS["MRI"]}}]})
    out = tmp_path / "runs"
    assert main(["turn", "--case", str(CASE), "--model", f"scripted:{panel}", "--role", "Neuroradiologist",
                 "--question", "Is brain MRI needed before surgery?", "--out", str(out)]) == 0
    given = ANSWERS[1]["answer"]
    [record] = judged(tmp_path, out, "--reference-answer", given).values()
    user = record.calls[0].messages[-1].content
    assert section(user, "QUESTION") == "Is brain MRI needed before surgery?"
    assert section(user, "TARGET_SPECIALIST_ROLE") == "Neuroradiologist"  # the authors' layout names the role
    assert record.overlap["rouge_l"]["against"] == "--reference-answer"
    assert abs(record.overlap["rouge_l"]["f1"] - rouge_l_f1(given, TURN_ANSWERS["MRI"])) < 1e-6
