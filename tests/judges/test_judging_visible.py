"""Judging that failed is shown, never dropped: coverage per rubric and component in `judge`, `compare`
and `report`; `judge` finds a cohort's traces and its later judgements reach the reports; a board
cohort is refused by `compare` in one line. Real cohorts with the scripted backend throughout."""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from consilium.cli import main
from consilium.judges.coverage import judging_coverage, print_coverage
from consilium.judges.record import read_judgement

ROOT = Path(__file__).resolve().parents[2]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
WRONG_SCHEMA = {"rules": [{"stage": "judge", "json": {"nope": 1}}]}
SCORES_2 = {"rules": [{"stage": "judge", "json": {"rationale": "r", "score": 2}}]}
SCORES_3 = {"rules": [{"stage": "judge", "json": {"rationale": "r", "score": 3}}]}
SCORES_4 = {"rules": [{"stage": "judge", "json": {"rationale": "r", "score": 4}}]}
# Safety (c8) answers the wrong shape, also when asked to repair it; every other criterion is scored.
SAFETY_FAILS = {"rules": [{"stage": "judge", "contains": "Criterion: Safety", "json": {"score": "high"}},
                          {"stage": "judge", "contains": "could not be used", "json": {"score": "high"}},
                          {"stage": "judge", "json": {"rationale": "r", "score": 2}}]}
WRONG_REASON = ("invalid judge output, also with the schema requested (this backend does not enforce it): the JSON "
                "does not match the "
                "ai-consilium-judgement schema: (root): Additional properties are not allowed ('nope' was unexpected)")


def script(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


def cases(tmp_path: Path, source: Path = CASE, n: int = 1) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    text = source.read_text()
    case_id = source.stem
    for i in range(n):
        (folder / f"c{i}.yaml").write_text(text.replace(f"id: {case_id}", f"id: {case_id}-{i}"))
    return folder


def cohort(tmp_path: Path, *extra: str, n: int = 1, source: Path = CASE, panel: str = PANEL) -> Path:
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(cases(tmp_path, source, n)), "--model", panel, "--out", str(out),
                 *extra]) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def warnings_of(err: str) -> list[str]:
    """stderr's lines but the progress lines (``[i/N] …``, one per item off a terminal: tests/cli/test_progress.py)."""
    return [line for line in err.strip().splitlines() if not re.match(r"\[\d+/\d+\] ", line)]


def test_a_wholly_not_evaluable_rubric_is_shown_and_warned_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = cohort(tmp_path, "--judge", "ai-consilium", "--judge-model", script(tmp_path, "j.json", WRONG_SCHEMA))
    records = [read_judgement(p) for p in sorted(run_dir.rglob("*.judge.ai-consilium.json"))]
    coverage = {r["component"]: r for r in judging_coverage(records)}
    assert coverage["conclusion"] == {"rubric": "ai-consilium", "component": "conclusion", "items": 22, "judged": 0,
                                      "not_evaluable": 22, "shortened": 0, "reasons": [[WRONG_REASON, 22]]}
    assert coverage["role_opinion"]["not_evaluable"] == 5 and coverage["role_reasoning"]["not_evaluable"] == 7
    capsys.readouterr()
    expected = f"warning: rubric ai-consilium: all 34 items not evaluable (commonest reason: {WRONG_REASON})"

    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model",
                 script(tmp_path, "j.json", WRONG_SCHEMA)]) == 1
    out, err = capsys.readouterr()
    assert "ai-consilium             conclusion      22 items: 0 judged, 22 not evaluable" in out
    assert warnings_of(err) == [expected]

    for command, folder, name in (("compare", "compare", "compare.md"), ("report", "report", "report.md")):
        assert main([command, str(run_dir)]) == 0
        out, err = capsys.readouterr()
        row = f"| ai-consilium | conclusion | 22 | 0 | 22 | 0 | {WRONG_REASON} ×22 |"
        assert "## Judging coverage" in out and row in out, command
        assert row in (run_dir / folder / name).read_text()
        assert warnings_of(err) == [expected], command
        table = {r["component"]: r for r in read_csv(run_dir / folder / "judging_coverage.csv")}
        assert table["role_opinion"]["not_evaluable"] == "5"


def test_partly_not_evaluable_is_counted_with_its_reason_and_no_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = cohort(tmp_path)
    capsys.readouterr()
    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model",
                 script(tmp_path, "j.json", SAFETY_FAILS), "--component", "conclusion"]) == 0
    out, err = capsys.readouterr()
    assert "conclusion      22 items: 20 judged, 2 not evaluable (invalid judge output" in out
    assert "warning" not in err
    assert main(["compare", str(run_dir)]) == 0
    [row] = read_csv(run_dir / "compare" / "judging_coverage.csv")
    assert (row["items"], row["judged"], row["not_evaluable"]) == ("22", "20", "2")
    assert "'high' is not one of" in row["commonest_reasons"] and row["commonest_reasons"].endswith("×2")


def test_a_board_rubric_on_a_consilium_trace_is_not_evaluable_instead_of_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = cohort(tmp_path)
    capsys.readouterr()
    assert main(["judge", str(run_dir), "--rubric", "otb-clinical-equivalence", "--judge-model",
                 script(tmp_path, "j.json", SCORES_3), "--reference-answer", "x"]) == 1
    _, err = capsys.readouterr()
    assert warnings_of(err) == ["warning: rubric otb-clinical-equivalence: all 2 items not evaluable "
                                "(commonest reason: the consilium trace has no answer)"]
    for path in run_dir.rglob("*.judge.otb-clinical-equivalence.json"):
        [item] = read_judgement(path).items
        assert item.component == "answer" and item.not_evaluable and item.score is None


def test_a_rubric_with_nothing_judged_is_a_warning() -> None:
    import io

    out, err = io.StringIO(), io.StringIO()
    assert print_coverage(judging_coverage([], rubrics=["otb-four-decision"]), out, err)
    assert err.getvalue().strip() == ("warning: rubric otb-four-decision: no items to judge "
                                      "(no completed trace was judged)")
    assert "otb-four-decision        -               0 items" in out.getvalue()


def test_judge_finds_a_cohorts_traces_and_its_records_reach_compare_and_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = cohort(tmp_path, n=2)
    capsys.readouterr()
    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model",
                 script(tmp_path, "j.json", SCORES_2)]) == 0
    out = capsys.readouterr().out
    assert out.count("== diagnostic-myocarditis-") == 4  # 2 cases × 2 formats, under arms/<model>/
    # Judging a cohort folder rebuilds its judgements.csv from the records, so the table never goes stale.
    assert {r["score"] for r in read_csv(run_dir / "judgements.csv") if r["criterion"] == "c1"} == {"2.0"}
    assert main(["compare", str(run_dir), "--bootstrap", "50"]) == 0
    scores = {(r["format"], r["component"], r["criterion"]): r for r in read_csv(run_dir / "compare" /
                                                                                 "table8_criteria.csv")}
    assert scores[("structured", "conclusion", "c1")]["n"] == "2" and scores[("free-form", "conclusion", "c1")][
        "mean"] == "2.0"
    assert read_csv(run_dir / "compare" / "table7_tokens.csv")[0]["mean_judge_score"] == "2.0"
    assert main(["report", str(run_dir)]) == 0
    assert any(r["criterion"] == "c8" for r in read_csv(run_dir / "report" / "scores.csv"))


def test_records_win_over_a_stale_judgements_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = cohort(tmp_path, "--judge", "ai-consilium", "--judge-model", script(tmp_path, "a.json", SCORES_2))
    assert {r["score"] for r in read_csv(run_dir / "judgements.csv") if r["criterion"] == "c1"} == {"2.0"}
    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model",
                 script(tmp_path, "b.json", SCORES_3)]) == 0  # re-judged after the cohort
    assert main(["compare", str(run_dir), "--bootstrap", "50"]) == 0
    rows = read_csv(run_dir / "compare" / "table8_criteria.csv")
    c1 = [r for r in rows if r["component"] == "conclusion" and r["criterion"] == "c1" and r["model"] != "pooled"]
    assert [(r["format"], r["n"], r["mean"]) for r in c1] == [("free-form", "1", "3.0"), ("structured", "1", "3.0")]
    [coverage] = [r for r in read_csv(run_dir / "compare" / "judging_coverage.csv") if r["component"] == "conclusion"]
    assert coverage["items"] == "22"  # 11 per trace, not doubled by the CSV


def _set_traces(run_dir: Path, where: Callable[[Path], str]) -> None:
    """Rewrite arms.csv's trace column: ``where`` gets the trace's path inside the run folder."""
    arms = read_csv(run_dir / "arms.csv")
    for arm in arms:
        parts = Path(arm["trace"]).parts
        arm["trace"] = where(Path(*parts[parts.index("arms"):]))
    with (run_dir / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(arms[0]))
        writer.writeheader()
        writer.writerows(arms)


def test_a_moved_cohort_folder_compares_with_relative_absolute_or_old_paths(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = cohort(tmp_path, "--judge", "ai-consilium", "--judge-model", script(tmp_path, "a.json", SCORES_2))
    moved = tmp_path / "elsewhere" / run_dir.name
    shutil.copytree(run_dir, moved)
    shutil.rmtree(run_dir)
    monkeypatch.chdir(tmp_path / "elsewhere")
    tables = []
    for where in (lambda p: str(p),  # relative to the run folder, as cohorts write them now
                  lambda p: str(run_dir / p),  # absolute, where the folder used to be
                  lambda p: str(Path("runs") / run_dir.name / p)):  # relative to where an old cohort ran
        _set_traces(moved, where)
        assert main(["compare", run_dir.name, "--bootstrap", "50"]) == 0
        tables.append((moved / "compare" / "table8_criteria.csv").read_text())
    assert tables[0] == tables[1] == tables[2] and "2.0" in tables[0]


def test_compare_refuses_a_board_cohort_in_one_line_and_report_covers_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The shipped panel writes a valid single-mode meeting; without that rule its single mode answers one line.
    shipped = yaml.safe_load((ROOT / "examples" / "models" / "scripted-panel.yaml").read_text())
    shipped["rules"] = [r for r in shipped["rules"] if r.get("role") != "board"]
    run_dir = cohort(tmp_path, "--protocol", "board", "--judge", "otb-conclusion-alignment", "--judge-model",
                     script(tmp_path, "j.json", SCORES_4),
                     source=ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml",
                     panel=script(tmp_path, "no-single.json", shipped))
    capsys.readouterr()
    assert main(["compare", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a board cohort" in err and "consilium report" in err
    assert "Traceback" not in err and not (run_dir / "compare").exists()
    assert main(["report", str(run_dir)]) == 0
    # The scripted single-mode answer has no <conclusion>: shown as not evaluable, not left out.
    assert ("| otb-conclusion-alignment | conclusion | 2 | 1 | 1 | 0 | the board trace has no conclusion ×1 |"
            in capsys.readouterr().out)
    rows = {r["mode"]: r for r in read_csv(run_dir / "report" / "board_summary.csv")}
    assert rows["agents"]["conclusion_alignment_mean"] == "4.0"
