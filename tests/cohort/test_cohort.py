"""Cohorts of imported AgentClinic cases with the scripted backend; compare's tables and figures."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_data

from consilium.cli import main

PANEL = {"model": "scripted-panel", "rules": [
    {"stage": "role_assignment", "json": {"primary": {"label": "Internist", "justification": "x"}, "supporting": [
        {"label": "Neurologist", "justification": "y"}, {"label": "Radiologist", "justification": "z"}]}},
    {"stage": "opinion", "contains": '"final_conclusion"', "json": {
        "clinical_data": "d", "syndromes": "s", "differential_diagnosis": "1. A", "diagnostic_strategy": "t",
        "management_strategy": "m", "final_conclusion": "A"}},
    {"stage": "opinion", "response": "Opinion of {role}."},
    {"stage": "synthesis", "contains": '"final_opinion"', "json": {
        "final_opinion": "A", "summary": "s", "final_differential": "1. A\n2. B", "diagnostic_plan": "d",
        "management_plan": "m", "safety_warnings": "w"}},
    {"stage": "synthesis", "response": "Report: A."},
    {"stage": "vote", "round": 1, "role": "radiologist", "json": {"vote": "dissent", "reason": "imaging",
                                                                 "requested_change": "add CT"}},
    {"stage": "vote", "json": {"vote": "accept", "reason": "ok", "requested_change": None}},
    {"stage": "revision", "contains": '"final_opinion": "..."', "json": {
        "changed": True, "change_summary": "CT", "report": {
            "final_opinion": "A", "summary": "s", "final_differential": "1. A", "diagnostic_plan": "CT",
            "management_plan": "m", "safety_warnings": "w"}}},
    {"stage": "revision", "json": {"changed": True, "change_summary": "CT", "report": "Report: A; CT."}},
]}
JUDGE = {"rules": [{"stage": "judge", "contains": "Final opinion:", "json": {"rationale": "r", "score": 3}},
                   {"stage": "judge", "json": {"rationale": "r", "score": 2}}]}


def write(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_a_cohort_of_20_agentclinic_cases_produces_every_table_and_figure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = shared_data("agentclinic_medqa.jsonl")
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(cases), "--limit", "20", "--model", write(tmp_path, "p.json", PANEL),
                 "--concurrency", "8", "--judge", "ai-consilium", "--judge-model", write(tmp_path, "j.json", JUDGE),
                 "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    arms = read_csv(run_dir / "arms.csv")
    assert len(arms) == 40 and {a["format"] for a in arms} == {"free-form", "structured"}
    assert all(a["status"] == "completed" and a["stop_reason"] == "consensus" and a["rounds"] == "2" for a in arms)
    judgements = read_csv(run_dir / "judgements.csv")
    assert {j["component"] for j in judgements} == {"conclusion", "role_reasoning", "role_opinion"}
    assert main(["compare", str(run_dir), "--bootstrap", "200"]) == 0
    report = run_dir / "compare"
    for name in ("table3_outcomes", "table4_vote_transitions", "table8_criteria", "table7_tokens", "table9_rounds",
                 "paired_differences"):
        assert (report / f"{name}.csv").is_file(), name
    for name in ("fig3a_cumulative_consensus", "fig4_stop_reasons", "fig5b_tokens_by_stage",
                 "fig6_score_distributions"):
        assert (report / f"{name}.png").stat().st_size > 2000, name
    table3 = read_csv(report / "table3_outcomes.csv")
    assert [(r["format"], round(float(r["r1_dissent_mean_pct"]), 1), r["r1_unanimous"], r["mean_rounds"],
             r["consensus"], r["consensus_pct"]) for r in table3 if r["model"] != "pooled"] == [
        ("free-form", 33.3, "0", "2.0", "20", "100.0"), ("structured", 33.3, "0", "2.0", "20", "100.0")]
    # Table 4 pools the formats, as the paper's does: 20 cases x 2 formats, one dissenting role each.
    transitions = read_csv(report / "table4_vote_transitions.csv")
    assert (transitions[0]["no_to_yes"], transitions[0]["no_to_yes_pct"], transitions[0]["yes_to_yes"]) == (
        "40", "100.0", "80")
    paired = {(r["component"], r["criterion"]): r for r in read_csv(report / "paired_differences.csv")}
    # The scripted judge gives 3 to structured reports (their text has sections) and 2 to free-form ones;
    # the difference is structured − free-form.
    assert float(paired[("conclusion", "c1")]["mean_difference"]) == pytest.approx(1.0)


def test_a_failed_arm_is_recorded_and_the_cohort_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = dict(PANEL, rules=[r for r in PANEL["rules"] if r["stage"] != "synthesis"] + [
        {"stage": "synthesis", "contains": "in prose", "response": "Report: A."},
        {"stage": "synthesis", "response": "no json here"}])
    cases = tmp_path / "cases"
    cases.mkdir()
    source = (Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml").read_text()
    for n in range(3):
        (cases / f"c{n}.yaml").write_text(source.replace("id: diagnostic-myocarditis", f"id: case-{n}"))
    out = tmp_path / "runs"
    # Some arms failed: exit 1, and the last line on stderr says how many and where their errors are.
    assert main(["cohort", "--cases", str(cases), "--model", write(tmp_path, "b.json", broken), "--out", str(out),
                 "--formats", "free-form,structured"]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "3 of 6 arms failed" in last and "arms.csv" in last
    [run_dir] = list(out.iterdir())
    arms = read_csv(run_dir / "arms.csv")
    assert [a["status"] for a in arms if a["format"] == "structured"] == ["failed"] * 3
    assert all(a["status"] == "completed" for a in arms if a["format"] == "free-form")
    failed = next(a for a in arms if a["status"] == "failed")
    assert failed["failed_stage"] == "synthesis" and "invalid StructuredReport output" in failed["error"]


def test_resume_skips_finished_arms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    source = (Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml").read_text()
    for n in range(4):
        (cases / f"c{n}.yaml").write_text(source.replace("id: diagnostic-myocarditis", f"id: case-{n}"))
    out = tmp_path / "runs"
    model = write(tmp_path, "p.json", PANEL)
    assert main(["cohort", "--cases", str(cases), "--model", model, "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    finished = {p: p.stat().st_mtime_ns for p in run_dir.glob("arms/*/*/*.trace.json")}
    victim = sorted(finished)[0]
    victim.unlink()  # as if the process had been killed before this arm finished
    capsys.readouterr()
    assert main(["cohort", "--cases", str(cases), "--model", model, "--resume", str(run_dir)]) == 0
    assert "8 arms (8 completed, 0 failed, 7 resumed)" in capsys.readouterr().out
    assert victim.is_file()
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in finished.items() if p != victim)


def test_bad_cohort_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cohort", "--cases", str(tmp_path / "nothing"), "--model", "scripted:x.json"]) == 2
    assert main(["cohort", "--cases", str(tmp_path), "--formats", "prose", "--model", "scripted:x.json"]) == 2
    err = capsys.readouterr().err
    assert "--cases must be a folder" in err or "no cases found" in err


def test_viewer_renders_hostile_text_inert(tmp_path: Path) -> None:
    hostile = '<script>alert(1)</script> "><img src=x onerror=alert(2)>'
    source = (Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml").read_text()
    case = tmp_path / "case.yaml"
    case.write_text(source.replace(
        "presentation: >-\n", f"presentation: >-\n  {hostile.replace(chr(34), chr(39) + chr(39))}\n", 1))
    panel = dict(PANEL, rules=[{"stage": "synthesis", "contains": "in prose", "response": hostile},
                               *PANEL["rules"]])
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(case), "--model", write(tmp_path, "p.json", panel), "--out", str(out),
                 "--format", "free-form"]) == 0
    [run_dir] = list(out.iterdir())
    assert main(["view", str(run_dir)]) == 0
    page = (run_dir / "view.html").read_text()
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "onerror=alert(2)&gt;" in page
    assert "Content-Security-Policy" in page and "Review round 1" in page and "Tokens by stage" in page


BOARD = {"model": "scripted-board", "rules": [
    {"stage": "role_assignment", "json": {"primary": {"label": "Medical oncologist", "justification": "x"},
                                          "supporting": [{"label": "Radiologist", "justification": "y"}]}},
    {"stage": "board_turn", "role": "moderator", "round": 1, "json": {
        "action": "ask", "speaker": "Radiologist", "message": "Radiology, the staging?"}},
    {"stage": "board_turn", "role": "moderator", "round": 3, "json": {
        "action": "ask", "speaker": "Medical oncologist", "message": "Oncology, the plan?"}},
    {"stage": "board_turn", "role": "moderator", "json": {"action": "close", "speaker": "Radiologist",
                                                         "message": "Thank you."}},
    {"stage": "board_turn", "role": "board", "response": "<discussion>\n<turn 1> Moderator: Staging?\n"
                                                         "<turn 2> Radiologist: Early.\n</discussion>\n"
                                                         "<conclusion>Surgery is advised. Review after.</conclusion>"},
    {"stage": "board_turn", "response": "I agree with the plan."},
    {"stage": "conclusion", "json": {"conclusion": "The board advises surgery. Adjuvant therapy follows pathology."}},
]}
BOARD_JUDGE = {"rules": [
    # The four-decision scores come in one answer (opentumorboard.txt App. C.3 L186).
    {"stage": "judge", "role": "conclusion:decisions",
     "json": {"therapy": 4, "surgery": -1, "next_action": -1, "clinical_trial": -1, "rationale": "r"}},
    {"stage": "judge", "json": {"rationale": "r", "score": 3}}]}


def test_a_board_cohort_and_its_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    cases = Path(__file__).resolve().parents[2] / "examples" / "cases"
    assert main(["cohort", "--protocol", "board", "--cases", str(cases), "--model",
                 write(tmp_path, "b.json", BOARD), "--judge", "otb-conclusion-alignment", "--judge",
                 "otb-four-decision", "--judge-model", write(tmp_path, "j.json", BOARD_JUDGE), "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    arms = read_csv(run_dir / "arms.csv")
    assert len(arms) == 10 and all(a["status"] == "completed" and a["format_exact"] == "1" for a in arms)
    assert main(["report", str(run_dir)]) == 0
    rows = {r["mode"]: r for r in read_csv(run_dir / "report" / "board_summary.csv")}
    assert rows["agents"]["turns_mean"] == "5.0" and rows["single"]["turns_mean"] == "2.0"
    assert rows["agents"]["conclusion_alignment_mean"] == "3.0" and rows["agents"]["format_exact_rate"] == "1.0"
    # therapy 4/5 only in scope: weighted mean 0.8
    assert rows["single"]["four_decision_mean"] == "0.8"
    assert (run_dir / "report" / "board_format.png").stat().st_size > 2000


def test_a_consilium_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = Path(__file__).resolve().parents[2] / "examples" / "cases"
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(cases), "--model", write(tmp_path, "p.json", PANEL), "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    assert main(["report", str(run_dir)]) == 0
    report = (run_dir / "report" / "report.md").read_text()
    assert "## Outcomes (ai-consilium.txt, Table 3)" in report and "fig4_stop_reasons" in report


def test_experiment_files_set_up_a_cohort(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configs = Path(__file__).resolve().parents[2] / "configs" / "experiments"
    cases = Path(__file__).resolve().parents[2] / "examples" / "cases"
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(cases), "--experiment", str(configs / "opentumorboard.yaml"),
                 "--model", write(tmp_path, "b.json", BOARD), "--judge-model", write(tmp_path, "j.json", BOARD_JUDGE),
                 "--limit", "2", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    assert {a["format"] for a in read_csv(run_dir / "arms.csv")} == {"board-agents", "board-single"}
    assert {j["rubric"] for j in read_csv(run_dir / "judgements.csv")} == {"otb-conclusion-alignment",
                                                                          "otb-four-decision"}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["max_turns"] == 12 and manifest["config"]["protocol"] == "board"
    bad = tmp_path / "bad.yaml"
    bad.write_text("protocol: consilium\nrun: {max_rounds: 0}\n")
    assert main(["cohort", "--cases", str(cases), "--experiment", str(bad), "--model", "scripted:x.json"]) == 2
    assert "bad.yaml: run.max_rounds: Input should be greater than or equal to 1" in capsys.readouterr().err
    assert main(["cohort", "--cases", str(cases), "--experiment", str(configs / "ai-consilium.yaml"),
                 "--model", "scripted:x.json"]) == 2  # judged experiment without a judge model


def test_viewer_page_is_inert_in_headless_chromium(tmp_path: Path) -> None:
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("headless Chromium is missing under CI: .ci/run installs Debian's chromium")
        pytest.skip("headless Chromium is not installed (Debian package chromium)")
    hostile = '<script>document.title="pwned"</script>"><img src=x onerror="document.title=1">'
    panel = dict(PANEL, rules=[{"stage": "synthesis", "contains": "in prose", "response": hostile}, *PANEL["rules"]])
    out = tmp_path / "runs"
    case = Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml"
    assert main(["simulate", "--case", str(case), "--model", write(tmp_path, "p.json", panel), "--out", str(out),
                 "--format", "free-form"]) == 0
    [run_dir] = list(out.iterdir())
    assert main(["view", str(run_dir)]) == 0
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", (run_dir / "view.html").as_uri()], capture_output=True, text=True, timeout=120)
    dom = done.stdout
    assert "<pre>" in dom, done.stderr[-2000:]
    assert "<img" not in dom and "pwned" not in dom.split("<title>")[1].split("</title>")[0]
    assert "&lt;script&gt;document.title" in dom


MATCH_JUDGE = {"rules": [{"stage": "judge", "contains": '"match"', "json": {"rationale": "r", "match": True}},
                         {"stage": "judge", "json": {"rationale": "r", "score": 2}}]}


def _cases_folder(tmp_path: Path, references: dict[str, dict[str, Any] | None]) -> Path:
    """A folder of the example diagnostic case under each id, with the reference given (None: none)."""
    import yaml

    source = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples" / "cases" /
                             "diagnostic-myocarditis.yaml").read_text())
    folder = tmp_path / "cases"
    folder.mkdir()
    for case_id, reference in references.items():
        case = {**source, "id": case_id}
        case.pop("reference", None)
        if reference is not None:
            case["reference"] = reference
        (folder / f"{case_id}.json").write_text(json.dumps(case))
    return folder


def test_a_judged_cohort_whose_cases_lack_the_rubrics_reference_is_refused_before_it_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _cases_folder(tmp_path, {
        "r1": {"diagnosis": "Myocarditis"}, "r2": {"conclusion": "Admit."}, "r3": None,
        "r4": {"diagnosis": "Pericarditis", "conclusion": "Treat."}, "r5": {"diagnosis": "  "}})
    out = tmp_path / "runs"
    panel, judge = write(tmp_path, "p.json", PANEL), write(tmp_path, "j.json", MATCH_JUDGE)
    argv = ["cohort", "--cases", str(folder), "--model", panel, "--formats", "free-form", "--judge-model", judge,
            "--out", str(out)]
    # r2, r3 and r5 have no diagnosis (r5's is blank): 3 of 5, the first in the cohort's order being r2.
    assert main([*argv, "--judge", "nmb-diagnosis-match"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"consilium: error: --judge nmb-diagnosis-match: 3 of 5 cases lack reference.diagnosis, which it scores "
        f"against (first: {folder / 'r2.json'}); add it to the cases, or pass --allow-missing-reference to run "
        "them anyway (their judgements are not evaluable)")
    assert not out.exists()
    # What a rubric needs is read from its file: the same rubric scoring against the conclusion needs that.
    rubric = (Path(__file__).resolve().parents[2] / "consilium" / "judges" / "rubrics" / "nmb-diagnosis-match.yaml")
    custom = tmp_path / "conclusion-match.yaml"
    custom.write_text(rubric.read_text().replace("name: nmb-diagnosis-match", "name: conclusion-match")
                      .replace("reference: diagnosis", "reference: conclusion"))
    assert main([*argv, "--judge", str(custom)]) == 2
    # r1, r3 and r5 have no conclusion.
    assert "--judge conclusion-match: 3 of 5 cases lack reference.conclusion, which it scores against (first: " \
           f"{folder / 'r1.json'})" in capsys.readouterr().err
    assert not out.exists()
    # With the flag the cohort runs, says how many, and those cases' judgements are not evaluable.
    assert main([*argv, "--judge", "nmb-diagnosis-match", "--allow-missing-reference"]) == 0
    err = capsys.readouterr().err
    assert ("--allow-missing-reference: 3 of 5 cases lack reference.diagnosis (nmb-diagnosis-match); their "
            "judgements will be not evaluable") in err
    [run_dir] = list(out.iterdir())
    evaluable = {}
    for path in run_dir.glob("arms/**/*.judge.nmb-diagnosis-match.json"):
        record = json.loads(path.read_text())
        evaluable[record["case_id"]] = any(not item["not_evaluable"] for item in record["items"])
    assert evaluable == {"r1": True, "r2": False, "r3": False, "r4": True, "r5": False}


def _ids(run_dir: Path) -> list[str]:
    return list(json.loads((run_dir / "manifest.json").read_text())["settings"]["case_hashes"])


def test_limit_takes_the_first_cases_in_natural_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _cases_folder(tmp_path, {f"mac-{n}": {"diagnosis": "Myocarditis"} for n in (11, 0, 10, 2, 1, 3)})
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(folder), "--model", write(tmp_path, "p.json", PANEL), "--formats",
                 "free-form", "--limit", "4", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    # By hand: 0, 1, 2, 3 come before 10 and 11 (string order would take mac-0, mac-1, mac-10, mac-11).
    assert _ids(run_dir) == ["mac-0", "mac-1", "mac-2", "mac-3"]
    assert sorted(a["case_id"] for a in read_csv(run_dir / "arms.csv")) == ["mac-0", "mac-1", "mac-2", "mac-3"]


def test_a_seeded_sample_is_reproducible_and_recorded_in_the_manifest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import random

    import consilium

    numbers = list(range(12))
    folder = _cases_folder(tmp_path, {f"mac-{n}": {"diagnosis": "Myocarditis"} for n in numbers})
    panel = write(tmp_path, "p.json", PANEL)

    def expected(seed: int) -> list[str]:
        # random.Random(seed).sample of the positions in natural order (mac-0 … mac-11), kept in that order.
        return [f"mac-{numbers[i]}" for i in sorted(random.Random(seed).sample(range(12), 3))]

    assert expected(7) != expected(8)
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(folder), "--model", panel, "--formats", "free-form", "--sample", "3",
                 "--seed", "7", "--out", str(out)]) == 0
    [first] = list(out.iterdir())
    settings = json.loads((first / "manifest.json").read_text())["settings"]
    assert settings["sample"] == {"n": 3, "seed": 7} and settings["limit"] is None
    assert _ids(first) == expected(7)
    again = consilium.run_cohort(folder, models=[panel], formats=["free-form"], sample=3, seed=7,
                                 out=tmp_path / "again")
    assert _ids(again.run_dir) == expected(7) and again.manifest.settings.sample is not None
    other = consilium.run_cohort(folder, models=[panel], formats=["free-form"], sample=3, seed=8,
                                 out=tmp_path / "other")
    assert _ids(other.run_dir) == expected(8)
    # A resume draws the same cases; a different sample is refused like any changed flag.
    capsys.readouterr()
    assert main(["cohort", "--resume", str(first), "--sample", "4"]) == 2
    assert "--sample: 4 differs from the resumed cohort's 3" in capsys.readouterr().err
    assert main(["cohort", "--resume", str(first)]) == 0
    assert "3 arms (3 completed, 0 failed, 3 resumed)" in capsys.readouterr().out
    for extra, message in ((["--sample", "13"], "--sample 13: there are only 12 cases to sample from"),
                           (["--sample", "3", "--limit", "3"], "--sample: give --limit or --sample, not both")):
        assert main(["cohort", "--cases", str(folder), "--model", panel, *extra, "--out", str(tmp_path / "x")]) == 2
        assert capsys.readouterr().err.strip() == f"consilium: error: {message}"
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("selection", [["--sample", "3", "--seed", "7"], ["--limit", "3"]])
def test_a_resumed_cohort_that_took_some_cases_runs_those_after_the_folder_gains_one(
        selection: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A case added to the folder after the cohort started changes what --sample (or, sorting first, --limit)
    would draw; the resume runs the cases the manifest lists, and only one of those gone is refused."""
    folder = _cases_folder(tmp_path, {f"mac-{n}": {"diagnosis": "Myocarditis"} for n in range(1, 9)})
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(folder), "--model", write(tmp_path, "p.json", PANEL), "--formats",
                 "free-form", *selection, "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    drawn = _ids(run_dir)
    # By hand: the first three in natural order, or random.Random(7).sample of the eight positions.
    import random
    assert drawn == (["mac-1", "mac-2", "mac-3"] if selection[0] == "--limit"
                     else [f"mac-{i + 1}" for i in sorted(random.Random(7).sample(range(8), 3))])
    (folder / "mac-0.json").write_text((folder / "mac-8.json").read_text().replace('"mac-8"', '"mac-0"'))
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    assert "3 arms (3 completed, 0 failed, 3 resumed)" in capsys.readouterr().out
    assert _ids(run_dir) == drawn
    (folder / f"{drawn[1]}.json").unlink()
    assert main(["cohort", "--resume", str(run_dir)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"case {drawn[1]!r} is gone since the cohort started; a resumed cohort runs the cases it started with")
