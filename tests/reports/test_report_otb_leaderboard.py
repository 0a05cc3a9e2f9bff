"""`consilium report RUN_DIR --style otb-leaderboard` summarises board arms and Specialist Turns as the
OpenTumorBoard leaderboard does (the authors' summarize_llm_judge_batch.py and text_metrics.py rules).

One scripted run folder, made once: a board cohort (single mode) of models a and b on cases t1–t3, judged for
conclusion alignment and the four decisions, and six Specialist Turns beside it (two question types), judged
for clinical equivalence. It holds a board with no conclusion (a, t3), a failed arm (b, t2), judge failures
(b, t3 on both rubrics; b's imaging turn), out-of-scope decisions (−1). Every expected value is worked out
here by hand from the fixture's inputs, never by the code under test.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.isolation import isolated
from support.scripts import Scripted

from consilium.api import report
from consilium.cli import main
from consilium.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
DIMS = ("therapy", "surgery", "next_action", "clinical_trial")
REFERENCES = {"t1": "Surgery then chemotherapy is the plan. Brain imaging comes first.",
              "t2": "No surgery is advised. Radiotherapy and a trial screen follow.",
              "t3": "Watch and scan later."}
# The two questions and their types; the reference answers the real specialists gave.
QUESTIONS = {"Surgeon": ("Would you operate?", "treatment", "I would operate after staging."),
             "Radiologist": ("What does the scan show?", "imaging", "The scan shows a small nodule.")}
# (model, case) -> the board's conclusion, each with its tag; None: the model's answer has none / its call fails.
CONCLUSIONS: dict[tuple[str, str], str | None] = {
    ("a", "t1"): "Surgery then chemotherapy qa1. Brain imaging next.",
    ("a", "t2"): "Radiotherapy and a trial qa2. No surgery.",
    ("a", "t3"): None,  # a transcript without a conclusion: a format failure
    ("b", "t1"): "Chemotherapy alone qb1. No imaging.",
    ("b", "t2"): None,  # the board call fails: a failed arm
    ("b", "t3"): "Watch qb3. Scan later.",
}
ALIGN: dict[str, int | None] = {"qa1": 4, "qa2": 5, "qb1": 2, "qb3": None}  # None: not evaluable
DECIDE: dict[str, tuple[int, ...] | None] = {"qa1": (5, 4, -1, -1), "qa2": (3, -1, 2, 4), "qb1": (1, 2, 3, -1),
                                             "qb3": None}  # None: an invalid answer
# (model, case, role) -> (clinical equivalence, critical error, unsupported claim); None: an invalid answer.
TURNS: dict[tuple[str, str, str], tuple[int, bool, bool] | None] = {
    ("a", "t1", "Surgeon"): (5, False, False), ("a", "t1", "Radiologist"): (3, True, False),
    ("a", "t2", "Surgeon"): (4, False, True), ("b", "t1", "Surgeon"): (2, True, True),
    ("b", "t1", "Radiologist"): None, ("b", "t2", "Surgeon"): (1, False, False)}


def write_cases(folder: Path) -> Path:
    folder.mkdir()
    base = yaml.safe_load(NSCLC.read_text())
    for case_id, conclusion in REFERENCES.items():
        answers = [{"question": q, "answer": a, "role": role, "qa_type": kind} for role, (q, kind, a) in
                   QUESTIONS.items()]
        case = {**base, "id": case_id, "presentation": f"{base['presentation']} Marker casemark-{case_id}.",
                "reference": {"conclusion": conclusion, "answers": answers}}
        (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(case))
    return folder


def transcript(conclusion: str | None) -> str:
    body = "<discussion>\n<turn 1> Moderator: Staging?\n<turn 2> Radiologist: Early.\n</discussion>"
    return body if conclusion is None else f"{body}\n<conclusion>{conclusion}</conclusion>"


def board_script(model: str) -> Scripted:
    script = Scripted(f"model-{model}")
    for case in ("t1", "t2", "t3"):
        conclusion = CONCLUSIONS[(model, case)]
        if model == "b" and case == "t2":
            script.fail("board_turn", where={"contains": "casemark-t2"})
        else:
            script.rule("board_turn", where={"contains": f"casemark-{case}"}, response=transcript(conclusion))
    # A repair request names no case: the meeting without a conclusion is written again as it was.
    return script.rule("board_turn", response=transcript(CONCLUSIONS[("a", "t3")]))


def board_judge() -> Scripted:
    script = Scripted("judge")
    for tag, aligned in ALIGN.items():
        script.score(aligned if aligned is not None else "not_evaluable", item="conclusion:conclusion_alignment",
                     where={"contains": tag})
    invalid = {**dict.fromkeys(DIMS, "high"), "rationale": "r"}
    for tag, scores in DECIDE.items():
        answer = invalid if scores is None else {**dict(zip(DIMS, scores, strict=True)), "rationale": "r"}
        script.judge(answer, item="conclusion:decisions", where={"contains": tag})
    return script.judge(invalid, item="conclusion:decisions", where={"contains": "could not be used"})


def turn_tag(model: str, case: str, role: str) -> str:
    return f"ans{model}{case}{role[0]}"


def turn_judge() -> Scripted:
    script = Scripted("judge")
    invalid = {"rationale": "r", "score": "high"}
    for key, verdict in TURNS.items():
        answer = invalid if verdict is None else {"rationale": "r", "score": verdict[0],
                                                  "critical_error": verdict[1], "unsupported_claim": verdict[2]}
        script.judge(answer, where={"contains": turn_tag(*key)})
    return script.judge(invalid, where={"contains": "could not be used"})


def build(tmp: Path) -> Path:
    cases = write_cases(tmp / "cases")
    runs = tmp / "runs"
    judge = board_judge().write(tmp / "judge.json")
    code = main(["cohort", "--protocol", "board", "--modes", "single", "--cases", str(cases),
                 "--model", board_script("a").write(tmp / "a.json"),
                 "--extra-model", board_script("b").write(tmp / "b.json"),
                 "--judge", "otb-conclusion-alignment", "--judge", "otb-four-decision", "--judge-model", judge,
                 "--out", str(runs)])
    assert code == 1  # one arm failed
    [cohort] = [p for p in runs.iterdir() if p.is_dir()]
    status = {(r["model"], r["case_id"]): r["status"] for r in csv.DictReader((cohort / "arms.csv").open())}
    # a's t3 board completed without a conclusion; b's t2 failed
    assert (status[("model-a", "t3")], status[("model-b", "t2")]) == ("completed", "failed")
    turn_judge_spec = turn_judge().write(tmp / "turn-judge.json")
    for model in ("a", "b"):
        rules = Scripted(f"model-{model}")
        for (m, case, role) in TURNS:
            if m == model:
                rules.rule("specialist_turn", where={"contains_all": [f"casemark-{case}", QUESTIONS[role][0]]},
                           json={"answer": f"I would act {turn_tag(m, case, role)}."})
        spec = rules.write(tmp / f"turn-{model}.json")
        for (m, case, role), verdict in TURNS.items():
            if m != model:
                continue
            out = runs / "turns" / f"{model}-{case}-{role}"
            assert main(["turn", "--case", str(cases / f"{case}.yaml"), "--model", spec, "--role", role,
                         "--question", QUESTIONS[role][0], "--out", str(out)]) == 0
            [trace] = out.rglob("*.trace.json")
            code = main(["judge", str(trace), "--rubric", "otb-clinical-equivalence", "--judge-model",
                         turn_judge_spec])
            assert code == (1 if verdict is None else 0)
    return runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("otb-leaderboard")
    with isolated(tmp):
        folder = build(tmp)
        assert main(["report", str(folder), "--style", "otb-leaderboard", "--bootstrap", "200"]) == 0
    return folder


def lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def rouge(candidate: str, reference: str) -> float:
    """ROUGE-L F1 by hand: lower-cased alphanumeric words, no stemming."""
    def words(text: str) -> list[str]:
        return "".join(c if c.isalnum() else " " for c in text.lower()).split()
    c, r = words(candidate), words(reference)
    n = lcs(c, r)
    return 0.0 if n == 0 else 2 * (n / len(c)) * (n / len(r)) / (n / len(c) + n / len(r))


def summary(runs: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((runs / "report" / "summary.json").read_text())
    return data


def test_missing_conclusions_and_failed_arms_score_the_floor_and_judge_failures_are_counted_apart(runs: Path) -> None:
    got = summary(runs)["task1"]
    assert got["rubric"] == "conclusion_alignment"
    # a: t1 4, t2 5, t3 no conclusion → 1: (4 + 5 + 1) / 3. b: t1 2, t2 failed → 1, t3 judge failure left out.
    assert got["models"] == {
        "model-a [single]": {"items": 3, "scored": 2, "format_failures": 1, "judge_failures": 0,
                             "conclusion_alignment": pytest.approx(10 / 3)},
        "model-b [single]": {"items": 3, "scored": 1, "format_failures": 1, "judge_failures": 1,
                             "conclusion_alignment": 1.5}}


def test_each_decision_is_averaged_over_the_cases_that_take_it(runs: Path) -> None:
    got = summary(runs)["task1_four_decisions"]
    assert got["rubric"] == "four_decisions"
    a, b = got["models"]["model-a [single]"], got["models"]["model-b [single]"]
    # a: qa1 (5, 4, −1, −1) and qa2 (3, −1, 2, 4); the −1s are out of scope, the t3 format failure not counted.
    assert {d: a[d] for d in DIMS} == {"therapy": {"mean": 4.0, "cases": 2}, "surgery": {"mean": 4.0, "cases": 1},
                                       "next_action": {"mean": 2.0, "cases": 1},
                                       "clinical_trial": {"mean": 4.0, "cases": 1}}
    # b: qb1 (1, 2, 3, −1) only; qb3's invalid answer is a judge failure, t2 a format failure.
    assert {d: b[d] for d in DIMS} == {"therapy": {"mean": 1.0, "cases": 1}, "surgery": {"mean": 2.0, "cases": 1},
                                       "next_action": {"mean": 3.0, "cases": 1},
                                       "clinical_trial": {"mean": None, "cases": 0}}
    assert (a["scored"], a["format_failures"], a["judge_failures"]) == (2, 1, 0)
    assert (b["scored"], b["format_failures"], b["judge_failures"]) == (1, 1, 1)
    assert "composite" not in a


def test_specialist_turn_rates_are_fractions_with_a_question_type_breakdown(runs: Path) -> None:
    got = summary(runs)["task2"]
    a, b = got["models"]["model-a"], got["models"]["model-b"]
    # a: 5 (treatment), 3 critical (imaging), 4 unsupported (treatment).
    assert (a["items"], a["scored"], a["judge_failures"]) == (3, 3, 0)
    assert a["clinical_equivalence"] == pytest.approx(12 / 3)
    assert (a["critical_error_rate"], a["unsupported_claim_rate"]) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert a["by_question_type"] == {
        "imaging": {"count": 1, "clinical_equivalence": 3.0, "critical_error_rate": 1.0,
                    "unsupported_claim_rate": 0.0},
        "treatment": {"count": 2, "clinical_equivalence": 4.5, "critical_error_rate": 0.0,
                      "unsupported_claim_rate": 0.5}}
    # b: 2 critical and unsupported, 1; the imaging answer's judge failed: left out, counted.
    assert (b["items"], b["scored"], b["judge_failures"], b["clinical_equivalence"]) == (3, 2, 1, 1.5)
    assert (b["critical_error_rate"], b["unsupported_claim_rate"]) == (0.5, 0.5)
    assert list(b["by_question_type"]) == ["treatment"]


def test_rouge_l_counts_a_missing_conclusion_as_zero(runs: Path) -> None:
    metrics = summary(runs)["text_metrics"]
    board = {m: [rouge(c, REFERENCES[case]) if c else 0.0 for (mm, case), c in CONCLUSIONS.items() if mm == m]
             for m in ("a", "b")}
    for model in ("a", "b"):
        got = metrics["task1"][f"model-{model} [single]"]
        assert (got["items"], got["format_failures"]) == (3, 1)
        assert got["rouge_l_f1"] == pytest.approx(sum(board[model]) / 3)
    # Specialist Turn: every answer has text, each against its question's reference answer.
    answers = [rouge(f"I would act {turn_tag(*key)}.", QUESTIONS[key[2]][2]) for key in TURNS if key[0] == "a"]
    assert metrics["task2"]["model-a"]["rouge_l_f1"] == pytest.approx(sum(answers) / 3)


def test_the_table_sits_beside_the_leaderboard_and_consilium_tables_keep_their_own(runs: Path) -> None:
    report_dir = runs / "report"
    rows = {(r["task"], r["model"]): r for r in csv.DictReader((report_dir / "otb_leaderboard.csv").open())}
    align = rows[("task1", "model-a [single]")]
    assert float(align["conclusion_alignment"]) == pytest.approx(10 / 3)
    assert (align["format_failures"], align["judge_failures"]) == ("1", "0")
    decisions = rows[("task1_four_decisions", "model-b [single]")]
    assert (decisions["clinical_trial"], decisions["clinical_trial_cases"], decisions["surgery"]) == ("", "0", "2.0")
    assert float(rows[("task2", "model-b")]["critical_error_rate"]) == 0.5
    types = list(csv.DictReader((report_dir / "otb_leaderboard_by_question_type.csv").open()))
    assert [(t["model"], t["qa_type"], t["count"]) for t in types] == [
        ("model-a", "imaging", "1"), ("model-a", "treatment", "2"), ("model-b", "treatment", "2")]
    assert "| task1 | conclusion_alignment | model-b [single] | 3 | 1 | 1 | 1 | 1.5 |" in \
        (report_dir / "otb_leaderboard.md").read_text()
    # consilium's own report of the cohort is written beside it, as without the style
    assert {"report.md", "board_summary.csv", "otb_four_decision.csv"} <= {p.name for p in report_dir.iterdir()}


def test_a_file_it_did_not_write_is_left_alone(runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("report"))
    (copy / "report").mkdir()
    (copy / "report" / "summary.json").write_text('{"mine": 1}\n')
    with pytest.raises(UserError, match=r"summary\.json: exists and is not a leaderboard file"):
        report(copy, style="otb-leaderboard")
    assert sorted(p.name for p in (copy / "report").iterdir()) == ["summary.json"]  # nothing written
    assert main(["report", str(copy), "--style", "otb-leaderboard"]) == 2


def test_a_folder_of_specialist_turns_alone_gets_the_leaderboard_alone(runs: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(runs / "turns", tmp_path / "turns")
    done = report(copy, style="otb-leaderboard")
    assert sorted(p.name for p in done.leaderboard) == sorted(
        ["summary.json", "otb_leaderboard.csv", "otb_leaderboard_by_question_type.csv", "otb_leaderboard.md"])
    got = summary(copy)
    assert set(got) == {"task2", "text_metrics", "generation"}  # no board arm: no task1, and no cohort report
    # Every turn answered with the exact object {"answer": str}: parsed, as the authors' generation step reads it.
    assert got["generation"]["task2"] == {
        model: {"responses": 3, "parsed": 3, "parsed_after_cleanup": 0, "raw_fallback": 0, "errors": 0,
                "answer_schema_failures": 0} for model in ("model-a", "model-b")}
    assert got["task2"]["models"]["model-b"]["judge_failures"] == 1
    assert not (copy / "report" / "report.md").exists()
    with pytest.raises(UserError, match="style: 'leaderboard' is not one of consilium, otb-leaderboard"):
        report(copy, style="leaderboard")
