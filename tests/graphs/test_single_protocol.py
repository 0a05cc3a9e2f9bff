"""The single-specialist baseline (``--protocol single``, consilium/graphs/single/): the primary role
alone answers the case, in either format, with no panel, synthesis or voting; it simulates, replays,
is judged as a conclusion, and is viewed like every other protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from consilium.cli import main
from consilium.graphs.registry import read_trace
from consilium.judges.record import Judgement

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "consultation-afib-anticoagulation.yaml"

#: The panel's primary is a cardiologist; the baseline's answer names edoxaban (structured) or warfarin
#: (free-form), so the judge's two scores below differ by format.
PANEL: dict[str, Any] = {"model": "scripted-panel", "rules": [
    {"stage": "role_assignment", "json": {
        "primary": {"label": "Cardiologist", "justification": "rhythm"},
        "supporting": [{"label": "Neurologist", "justification": "stroke"},
                       {"label": "Clinical pharmacologist", "justification": "drugs"}]}},
    {"stage": "opinion", "contains_all": ["No panel meets on this case", '"final_opinion"'], "json": {
        "final_opinion": "Start edoxaban", "summary": "AF, CHA2DS2-VASc 4",
        "final_differential": "1. Atrial fibrillation\n2. Atrial flutter", "diagnostic_plan": "echo",
        "management_plan": "edoxaban 60 mg daily", "safety_warnings": "bleeding"}},
    {"stage": "opinion", "contains": "No panel meets on this case", "response": "Start warfarin, INR 2-3."},
]}
JUDGE: dict[str, Any] = {"model": "scripted-judge", "rules": [
    {"stage": "judge", "contains": "edoxaban", "json": {"rationale": "same plan", "score": 5}},
    {"stage": "judge", "json": {"rationale": "other drug", "score": 2}},
]}


def _simulate(tmp_path: Path, *extra: str) -> Path:
    panel = tmp_path / "panel.json"
    panel.write_text(json.dumps(PANEL), encoding="utf-8")
    out = tmp_path / "runs"
    assert main(["simulate", "--protocol", "single", "--case", str(CASE), "--model", f"scripted:{panel}",
                 "--out", str(out), *extra]) == 0
    [run_dir] = list(out.iterdir())
    return run_dir


def test_the_primary_alone_answers_in_both_formats(tmp_path: Path, capsys: Any) -> None:
    run_dir = _simulate(tmp_path)
    paths = sorted(run_dir.glob("*.trace.json"))
    assert [p.name.split(".")[1] for p in paths] == ["single-free-form", "single-structured"]
    free, structured = (read_trace(p) for p in paths)
    for trace in (free, structured):
        assert trace.kind == "single" and trace.status == "completed"
        assert trace.specialist == "cardiologist"
        # One role assignment (the consilium's own call) and one answer: no opinions of others, no synthesis,
        # no votes.
        assert [(c.stage, c.role) for c in trace.calls] == [("role_assignment", "moderator"),
                                                            ("opinion", "cardiologist")]
        assert trace.config.prompts and "answer_structured" in trace.config.prompts
    assert free.answer is not None and free.answer.text == "Start warfarin, INR 2-3." and free.answer.sections is None
    assert structured.answer is not None and structured.answer.sections is not None
    assert structured.answer.sections["final_opinion"] == "Start edoxaban"
    out = capsys.readouterr().out
    assert "· single-structured · scripted-panel · completed" in out
    assert "specialist: Cardiologist [cardiology] (alone; no panel)" in out and "answer: Start edoxaban" in out
    # The answer's budget is the consilium report's: 4800 characters, at 2.5 characters per token plus 128.
    assert structured.config.max_tokens["opinion"] == 4800 * 2 // 5 + 128


def test_it_replays_identically_with_no_model_call(tmp_path: Path, capsys: Any) -> None:
    run_dir = _simulate(tmp_path)
    capsys.readouterr()
    assert main(["replay", *map(str, sorted(run_dir.glob("*.trace.json")))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all("identical (2 recorded calls served, 0 model calls" in line for line in lines)


def test_a_changed_answer_is_a_replay_difference(tmp_path: Path, capsys: Any) -> None:
    run_dir = _simulate(tmp_path, "--format", "free-form")
    [path] = list(run_dir.glob("*.trace.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["answer"]["text"] = "Start aspirin."
    path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["replay", str(path)]) == 1
    assert "different: answer.text: recorded 'Start aspirin.', replayed 'Start warfarin, INR 2-3.'" in \
        capsys.readouterr().out


def test_its_answer_is_judged_as_a_conclusion(tmp_path: Path) -> None:
    run_dir = _simulate(tmp_path)
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps(JUDGE), encoding="utf-8")
    assert main(["judge", str(run_dir), "--rubric", "otb-conclusion-alignment", "--judge-model",
                 f"scripted:{judge}"]) == 0
    found = {p.name.split(".")[1]: Judgement.model_validate_json(p.read_text(encoding="utf-8"))
             for p in run_dir.glob("*.judge.otb-conclusion-alignment.json")}
    assert set(found) == {"single-free-form", "single-structured"}
    for variant, score in (("single-structured", 5), ("single-free-form", 2)):
        judgement = found[variant]
        assert judgement.trace_kind == "single"
        assert [(i.component, i.score) for i in judgement.items] == [("conclusion", score)]


def test_a_consilium_only_flag_is_refused_naming_it(tmp_path: Path, capsys: Any) -> None:
    assert main(["simulate", "--protocol", "single", "--case", str(CASE), "--model", "scripted:x.json",
                 "--max-rounds", "2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("--max-rounds: not a setting of protocol 'single'")
    assert [p.name for p in tmp_path.iterdir()] in ([], ["consilium.log.jsonl"])  # no run folder, no trace


def test_it_is_viewed_and_has_a_schema(tmp_path: Path, capsys: Any) -> None:
    run_dir = _simulate(tmp_path, "--format", "structured")
    page = tmp_path / "page.html"
    assert main(["view", str(run_dir), "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "single · structured" in html and "<h3>Specialist</h3>" in html and "Start edoxaban" in html
    capsys.readouterr()
    assert main(["schema", "single-trace"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["kind"]["const"] == "single"


def test_the_whole_case_criteria_are_not_evaluable_without_a_deliberation(tmp_path: Path) -> None:
    """ai-consilium.txt Table 29 (L260): the whole-case criteria are judged on every stage of the deliberation;
    the baseline has none, so they are not evaluable, unsent; its answer's own criteria are scored."""
    run_dir = _simulate(tmp_path, "--format", "structured")
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"model": "scripted-judge", "rules": [
        {"stage": "judge", "json": {"rationale": "adequate", "score": 2}}]}), encoding="utf-8")
    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", f"scripted:{judge}"]) == 0
    [path] = list(run_dir.glob("*.judge.ai-consilium.json"))
    judgement = Judgement.model_validate_json(path.read_text(encoding="utf-8"))
    whole = [i for i in judgement.items if i.detail.get("whole_case")]
    scored = [i for i in judgement.items if not i.detail.get("whole_case")]
    assert len(whole) == 3 and all(i.not_evaluable and i.score is None for i in whole)
    assert all("the single trace has no deliberation record" in (i.reason or "") for i in whole)
    assert scored and all(i.component == "conclusion" and i.score == 2 for i in scored)
    # Only the answer's own criteria were sent to the judge.
    assert judgement.usage.total.calls == len(scored)


def test_a_cohort_of_both_protocols_counts_their_judging_coverage_apart(tmp_path: Path, capsys: Any) -> None:
    panel = ROOT / "examples" / "models" / "scripted-panel.yaml"  # plays the consilium and the baseline
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"model": "scripted-judge", "rules": [
        {"stage": "judge", "json": {"rationale": "adequate", "score": 2}}]}), encoding="utf-8")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "c.yaml").write_text(CASE.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["cohort", "--cases", str(cases), "--protocol", "consilium,single", "--model", f"scripted:{panel}",
                 "--judge", "ai-consilium", "--judge-model", f"scripted:{judge}", "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [line.split() for line in out if "ai-consilium" in line and "items:" in line]
    rows = {(words[0], words[2]): (int(words[3]), int(words[5]), int(words[7])) for words in lines}
    # ai-consilium scores a conclusion on 8 output criteria and 3 whole-case ones (Table 29): 11 items per trace,
    # two traces (formats) per protocol; the baseline's 3 whole-case items per trace are not evaluable.
    assert rows[("consilium", "conclusion")] == (22, 22, 0)
    assert rows[("single", "conclusion")] == (22, 16, 6)


def test_both_formats_are_answered_by_one_specialist(tmp_path: Path, capsys: Any) -> None:
    """The formats share one role assignment (as the consilium's do, ai-consilium.txt Fig. 2a), even when the
    moderator would answer a second assignment otherwise; the second format's trace holds the copied call and
    replays on its own."""
    second = {"primary": {"label": "Neurologist", "justification": "stroke"},
              "supporting": [{"label": "Cardiologist", "justification": "rhythm"},
                             {"label": "Clinical pharmacologist", "justification": "drugs"}]}
    panel = {**PANEL, "rules": [{"stage": "role_assignment",
                                 "responses": [json.dumps(PANEL["rules"][0]["json"]), json.dumps(second)]},
                                *PANEL["rules"][1:]]}
    path = tmp_path / "panel.json"
    path.write_text(json.dumps(panel), encoding="utf-8")
    assert main(["simulate", "--protocol", "single", "--case", str(CASE), "--model", f"scripted:{path}",
                 "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    free, structured = (read_trace(p) for p in sorted(run_dir.glob("*.trace.json")))
    assert free.specialist == structured.specialist == "cardiologist"
    assert (free.role_assignment_shared, structured.role_assignment_shared) == (False, True)
    assert [c.stage for c in structured.calls] == ["role_assignment", "opinion"]
    capsys.readouterr()
    assert main(["replay", *map(str, sorted(run_dir.glob("*.trace.json")))]) == 0
    assert capsys.readouterr().out.count("identical (2 recorded calls served") == 2


def test_compare_leaves_a_mixed_cohorts_board_arms_out_and_says_so(tmp_path: Path, capsys: Any) -> None:
    panel = ROOT / "examples" / "models" / "scripted-panel.yaml"
    cases = tmp_path / "cases"
    cases.mkdir()
    board_case = ROOT / "examples" / "cases" / "tumor-board-rectal-cancer.yaml"
    (cases / board_case.name).write_text(board_case.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["cohort", "--cases", str(cases), "--protocol", "consilium,board,single", "--model",
                 f"scripted:{panel}", "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    capsys.readouterr()
    assert main(["compare", str(run_dir)]) == 0
    err = capsys.readouterr().err
    assert "note: the board arms are left out (compare contrasts the formats)" in err
    import csv

    rows = list(csv.DictReader((run_dir / "compare" / "table3_outcomes.csv").read_text(encoding="utf-8")
                               .splitlines()))
    assert sorted({r["protocol"] for r in rows}) == ["consilium", "single"]


def test_a_cohorts_stage_budgets_go_to_the_protocols_that_have_the_stage(tmp_path: Path, capsys: Any) -> None:
    panel = ROOT / "examples" / "models" / "scripted-panel.yaml"
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "c.yaml").write_text(CASE.read_text(encoding="utf-8"), encoding="utf-8")
    config = tmp_path / "run.yaml"
    config.write_text("max_tokens: {vote: 300, opinion: 900}\n", encoding="utf-8")
    assert main(["cohort", "--cases", str(cases), "--protocol", "consilium,single", "--model", f"scripted:{panel}",
                 "--config", str(config), "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    configs = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["settings"]["configs"]
    assert configs["consilium"]["max_tokens"]["vote"] == 300 and configs["consilium"]["max_tokens"]["opinion"] == 900
    assert configs["single"]["max_tokens"] == {"role_assignment": 768, "opinion": 900}
    config.write_text("max_tokens: {votes: 300}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["cohort", "--cases", str(cases), "--protocol", "consilium,single", "--model", f"scripted:{panel}",
                 "--config", str(config), "--out", str(tmp_path / "again")]) == 2
    assert "max_tokens: unknown stage 'votes' (no protocol of this cohort has it" in capsys.readouterr().err
