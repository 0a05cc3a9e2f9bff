"""A Specialist Turn whose answer breaks consilium's own answer schema (more than three sentences, no JSON object,
cut off) under the OpenTumorBoard presets: the official evaluation keeps every response and judges the answer its
extraction finds, so the turn completes with its raw response and a format finding, is judged, and the
leaderboard counts the finding apart; a response with no answer to find and a call that never answered still
fail the turn, and the summary floors them as format failures. Without a preset a broken answer fails the turn,
as before.

One folder of seven scripted turns of one model under ``--preset otb-paper``, each kind once (valid, four
sentences, plain prose, cut off, no answer, a failed call, an empty response), judged for clinical equivalence;
every expected figure is worked out here by hand from the official rules (summarize_llm_judge_batch.py: format
failures score 1 and are counted apart, rates over the scored items; run_vllm_qa_evaluation.py: parse statuses and
errors counted; text_metrics.py: unstemmed ROUGE-L over the answers found).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.isolation import isolated
from support.scripts import Scripted

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
# role -> (question, question type, the real specialist's answer)
QUESTIONS = {"Surgeon": ("Would you operate?", "treatment", "I would operate after staging."),
             "Radiologist": ("What does the scan show?", "imaging", "The scan shows a small nodule.")}
FOUR = "Operate on it tagv2. Stage it first. Give chemotherapy after. Review in a month."
PROSE = "The scan shows a nodule tagv3. It is small."
CUT = '{"answer": "The scan shows a mass tagv4 and'
# case -> (role, the scripted answer: a rule's fields, the answer the official extraction finds or None,
#          the judge's verdict or None, the generation step's status)
TURNS: dict[str, tuple[str, dict[str, Any], str | None, tuple[int, bool, bool] | None, str]] = {
    "c1": ("Surgeon", {"json": {"answer": "Resect the tumour tagv1. Then review."}},
           "Resect the tumour tagv1. Then review.", (4, False, False), "parsed"),
    # four sentences: consilium's schema allows three; the official generation step parses the object as it is
    "c2": ("Surgeon", {"json": {"answer": FOUR}}, FOUR, (2, True, False), "parsed"),
    # no JSON object: the official judging step reads the prose as it is
    "c3": ("Radiologist", {"response": PROSE}, PROSE, (3, False, True), "raw_fallback"),
    # cut off at max_tokens (kept under the preset): the wrapper is removed
    "c4": ("Radiologist", {"response": CUT, "finish_reason": "length"}, "The scan shows a mass tagv4 and",
           (5, False, False), "raw_fallback"),
    # a JSON object with no answer: nothing to judge, the turn fails
    "c5": ("Surgeon", {"json": {"plan": "none"}}, None, None, "raw_fallback"),
    # the call fails: no response at all
    "c6": ("Radiologist", {"fail": "model"}, None, None, "errors"),
    # an empty response (asked again, empty each time): the turn fails; the authors' script records it, unparsed
    "c7": ("Surgeon", {"response": ""}, None, None, "raw_fallback"),
}


def write_cases(folder: Path) -> Path:
    folder.mkdir()
    base = yaml.safe_load(NSCLC.read_text())
    for case_id in TURNS:
        answers = [{"question": q, "answer": a, "role": role, "qa_type": kind} for role, (q, kind, a) in
                   QUESTIONS.items()]
        case = {**base, "id": case_id, "presentation": f"{base['presentation']} Marker casemark-{case_id}.",
                "reference": {"conclusion": "Operate.", "answers": answers}}
        (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(case))
    return folder


def panel(tmp: Path) -> str:
    rules = [{"stage": "specialist_turn", "contains": f"casemark-{case}", **answer}
             for case, (_, answer, _, _, _) in TURNS.items()]
    return str(Scripted("model-m").extend(rules).write(tmp / "m.json"))


def judge(tmp: Path) -> str:
    script = Scripted("judge")
    for case, (_, _, _, verdict, _) in TURNS.items():
        if verdict is not None:
            script.judge({"rationale": "r", "score": verdict[0], "critical_error": verdict[1],
                          "unsupported_claim": verdict[2]}, where={"contains": f"tagv{case[1]}"})
    return str(script.write(tmp / "judge.json"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("otb-turn-schema")
    with isolated(tmp):
        cases, model, jury = write_cases(tmp / "cases"), panel(tmp), judge(tmp)
        codes, judged = {}, {}
        for case, (role, _, _, verdict, _) in TURNS.items():
            out = tmp / "runs" / case
            codes[case] = main(["turn", "--case", str(cases / f"{case}.yaml"), "--model", model, "--role", role,
                                "--question", QUESTIONS[role][0], "--preset", "otb-paper", "--out", str(out)])
            [trace] = out.rglob("*.trace.json")
            if verdict is not None:
                assert main(["judge", str(trace), "--rubric", "otb-clinical-equivalence", "--judge-model",
                             jury]) == 0
                [record] = out.rglob("*otb-clinical-equivalence*.json")
                judged[case] = json.loads(record.read_text())
        assert main(["report", str(tmp / "runs"), "--style", "otb-leaderboard"]) == 0
    traces = {case: json.loads(next((tmp / "runs" / case).rglob("*.trace.json")).read_text()) for case in TURNS}
    return {"root": tmp, "codes": codes, "traces": traces, "judged": judged,
            "summary": json.loads((tmp / "runs" / "report" / "summary.json").read_text())}


def test_a_broken_answer_completes_the_turn_with_its_raw_response_and_a_format_finding(runs: dict[str, Any]) -> None:
    codes, traces = runs["codes"], runs["traces"]
    # an answer was produced in c1-c4: each turn completes; c5 (no answer to find), c6 (no response) and c7 (an
    # empty one) fail
    assert codes == {"c1": 0, "c2": 0, "c3": 0, "c4": 0, "c5": 1, "c6": 1, "c7": 1}
    assert [traces[c]["status"] for c in TURNS] == ["completed"] * 4 + ["failed"] * 3
    assert all(t["config"]["schema_failure"] == "record" for t in traces.values())
    # the answer kept is the one the official extraction finds (on one line, as consilium records answers)
    assert {c: traces[c]["answer"] for c in ("c1", "c2", "c3", "c4")} == {c: TURNS[c][2] for c in
                                                                          ("c1", "c2", "c3", "c4")}
    # the raw response is the last call's, word for word
    assert traces["c3"]["calls"][-1]["response"] == PROSE and traces["c4"]["calls"][-1]["response"] == CUT
    findings = {c: traces[c]["answer_schema_failure"] for c in TURNS}
    assert findings["c1"] is None and findings["c5"] is None and findings["c6"] is None and findings["c7"] is None
    assert "at most three sentences, not 4" in findings["c2"]
    assert findings["c3"] and findings["c4"]
    assert any("breaks consilium's answer schema (cut off at max_tokens)" in n for n in traces["c4"]["notes"])
    assert any(n.startswith("the answer breaks consilium's answer schema, kept") for n in traces["c2"]["notes"])
    # a replay of the kept turn from its recorded calls comes out the same, finding included
    [kept] = (runs["root"] / "runs" / "c2").rglob("*.trace.json")
    assert main(["replay", str(kept)]) == 0
    # a turn with nothing to judge still fails loudly, its error saying why
    assert "the official extraction finds no answer in it either (unrecoverable)" in traces["c5"]["error"]
    assert traces["c6"]["error"] and not [c for c in traces["c6"]["calls"] if c["stage"] == "specialist_turn"]
    assert "empty" in traces["c7"]["error"] and traces["c7"]["calls"][-1]["response"] == ""


def test_the_judge_reads_the_official_answer_of_each_kept_turn(runs: dict[str, Any]) -> None:
    for case, record in runs["judged"].items():
        [call] = record["calls"]
        assert f"<CANDIDATE_ANSWER>\n{TURNS[case][2]}\n</CANDIDATE_ANSWER>" in call["messages"][1]["content"]
        assert record["items"][0]["score"] == TURNS[case][3][0]  # type: ignore[index]
    methods = {case: r["response_format"]["answer_extraction"] for case, r in runs["judged"].items()}
    assert methods == {"c1": "parsed", "c2": "parsed", "c3": "raw_plain_text", "c4": "raw_json_wrapper_recovered"}


def test_the_leaderboard_judges_kept_turns_and_floors_only_turns_without_an_answer(runs: dict[str, Any]) -> None:
    entry = runs["summary"]["task2"]["models"]["model-m"]
    # scored: c1 4, c2 2, c3 3, c4 5; c5, c6 and c7 are format failures at the floor, 1:
    # (4 + 2 + 3 + 5 + 1 + 1 + 1) / 7
    assert (entry["items"], entry["scored"], entry["format_failures"], entry["judge_failures"]) == (7, 4, 3, 0)
    assert entry["clinical_equivalence"] == pytest.approx(17 / 7)
    # rates over the four scored: one critical error (c2), one unsupported claim (c3)
    assert (entry["critical_error_rate"], entry["unsupported_claim_rate"]) == (0.25, 0.25)
    assert entry["by_question_type"] == {
        "imaging": {"count": 2, "clinical_equivalence": 4.0, "critical_error_rate": 0.0,
                    "unsupported_claim_rate": 0.5},
        "treatment": {"count": 2, "clinical_equivalence": 3.0, "critical_error_rate": 0.5,
                      "unsupported_claim_rate": 0.0}}


def test_parse_statuses_errors_and_schema_findings_are_counted_apart(runs: dict[str, Any]) -> None:
    # responses: all but c6; parsed c1, c2; raw_fallback c3, c4, c5, c7; errors c6; findings c2, c3, c4
    assert runs["summary"]["generation"]["task2"] == {"model-m": {
        "responses": 6, "parsed": 2, "parsed_after_cleanup": 0, "raw_fallback": 4, "errors": 1,
        "answer_schema_failures": 3}}
    [row] = list(csv.DictReader((runs["root"] / "runs" / "report" / "otb_leaderboard.csv").open()))
    assert (row["format_failures"], row["raw_fallback"], row["generation_errors"], row["answer_schema_failures"]) \
        == ("3", "4", "1", "3")
    page = (runs["root"] / "runs" / "report" / "otb_leaderboard.md").read_text()
    assert "answer_schema_failures" in page


def lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def rouge(candidate: str, reference: str) -> float:
    """ROUGE-L F1 by hand: lower-cased alphanumeric words, no stemming."""
    c, r = ("".join(ch if ch.isalnum() else " " for ch in t.lower()).split() for t in (candidate, reference))
    n = lcs(c, r)
    return 0.0 if n == 0 else 2 * n / (len(c) + len(r))


def test_rouge_l_is_over_every_answer_found_kept_turns_included(runs: dict[str, Any]) -> None:
    found = [rouge(text, QUESTIONS[role][2]) for role, _, text, _, _ in TURNS.values() if text]
    got = runs["summary"]["text_metrics"]["task2"]["model-m"]
    assert (got["items"], got["format_failures"], got["no_reference"]) == (7, 3, 0)
    assert got["rouge_l_f1"] == pytest.approx(sum(found) / 4)


def test_without_a_preset_or_with_schema_failure_fail_a_broken_answer_fails_the_turn(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases")
    # without the preset the answer is sent back for repair (a request naming no case): it comes back the same
    model = Scripted("model-m").rule("specialist_turn", json={"answer": FOUR}).write(tmp_path / "m.json")
    config = tmp_path / "fail.yaml"
    config.write_text("preset: otb-paper\nschema_failure: fail\n")
    for name, extra in (("default", []), ("overridden", ["--config", str(config)])):
        out = tmp_path / name
        assert main(["turn", "--case", str(cases / "c2.yaml"), "--model", model, "--role", "Surgeon",
                     "--question", QUESTIONS["Surgeon"][0], "--out", str(out), *extra]) == 1
        [path] = out.rglob("*.trace.json")
        trace = json.loads(path.read_text())
        assert (trace["status"], trace["answer"], trace["answer_schema_failure"]) == ("failed", None, None)
        assert trace["config"]["schema_failure"] == "fail"
        assert "at most three sentences, not 4" in trace["error"]
