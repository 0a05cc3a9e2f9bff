"""A run folder's own traces and judgement records (consilium/runfolder/layout.py): what ``judge``, ``jury``,
``calibrate``, ``view``, ``replay`` and the reports read when given a folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from consilium.cli import main
from consilium.cohort.lock import clean_temp_files
from consilium.runfolder.layout import judgement_files, own_files, trace_files


def touch(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_run_folder_lists_its_own_files_not_those_of_runs_nested_in_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"  # not a run: a folder of several, each searched on its own terms
    cohort = runs / "cohort"
    touch(cohort / "manifest.json")
    a = touch(cohort / "arms" / "m" / "a.free-form.trace.json")
    a_judged = touch(cohort / "arms" / "m" / "a.free-form.judge.otb-conclusion-alignment.json")
    a_other = touch(cohort / "arms" / "m" / "a.free-form.judge.nmb-diagnosis-match.json")
    notes = touch(cohort / "notes" / "z.trace.json")  # a plain subfolder of the cohort is the cohort's
    # ablate/ (no marker: written before ablations had one), an ablation put elsewhere with --out, a nested run
    ablated = touch(cohort / "ablate" / "single" / "run-1" / "arms" / "m" / "a.free-form.single.trace.json")
    touch(cohort / "ablate" / "single" / "run-1" / "arms" / "m" / "a.free-form.single.judge.otb-conclusion-alignment"
                                                                   ".json")
    touch(cohort / "elsewhere" / "ablation.json")
    elsewhere = touch(cohort / "elsewhere" / "arms" / "x.free-form.no-deliberation.trace.json")
    touch(cohort / "elsewhere" / "originals" / "a.free-form.judge.otb-conclusion-alignment.json")
    touch(cohort / "nested" / "manifest.json")
    nested = touch(cohort / "nested" / "y.free-form.trace.json")
    touch(cohort / "a.free-form.trace.json.tmp")  # a half-written file is not a trace
    touch(runs / "run-b" / "manifest.json")
    b = touch(runs / "run-b" / "b.free-form.trace.json")
    loose = touch(runs / "loose.trace.json")

    assert trace_files(cohort) == [a, notes]
    assert judgement_files(cohort, "otb-conclusion-alignment") == [a_judged]
    assert judgement_files(cohort) == sorted([a_judged, a_other])
    # Given a folder of runs, each run is read as if given alone, and loose traces are read too.
    assert trace_files(runs) == sorted([a, notes, b, loose])
    # A nested run named on its own is a run like any other.
    assert trace_files(cohort / "ablate") == [ablated]
    assert trace_files(cohort / "elsewhere") == [elsewhere]
    assert trace_files(cohort / "nested") == [nested]
    assert own_files(cohort, "*.json.tmp") == [cohort / "a.free-form.trace.json.tmp"]


def test_a_cohorts_resume_cleans_its_own_half_written_files_not_those_of_a_run_nested_in_it(tmp_path: Path) -> None:
    """A resumed cohort removes the temporary files its killed writes left; an ablation running inside its
    folder (under ablate/, or put by --out elsewhere in it) holds no lock of the cohort: its are left alone."""
    cohort = tmp_path / "cohort"
    touch(cohort / "manifest.json")
    own = [touch(cohort / ".arms.csv.x1.tmp"), touch(cohort / "arms" / "m" / ".a.free-form.trace.json.x2.tmp")]
    theirs = [touch(cohort / "ablate" / "single" / "run-1" / "arms" / ".b.trace.json.x3.tmp"),
              touch(cohort / "mine" / ".report.md.x4.tmp")]
    touch(cohort / "mine" / "ablation.json")
    assert clean_temp_files(cohort) == 2
    assert [p.exists() for p in own + theirs] == [False, False, True, True]


# ---- a run folder given as "." keeps its own name (tests/support/panel_judged_cohort.py) ----------------------


def test_a_run_folder_given_as_dot_keeps_its_name(panel_judged_cohort: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(panel_judged_cohort)
    capsys.readouterr()
    assert main(["cohort", "--resume", "."]) == 0
    assert f"cohort {panel_judged_cohort.name}: 1 arms" in capsys.readouterr().out
    assert main(["compare", ".", "--bootstrap", "10"]) == 0
    assert (panel_judged_cohort / "compare" / "compare.md").read_text().startswith(
        f"# Free-form vs structured: {panel_judged_cohort.name}\n")
    assert main(["report", ".", "--bootstrap", "10"]) == 0
    assert (panel_judged_cohort / "report" / "report.md").read_text().startswith(
        f"# Cohort report: {panel_judged_cohort.name}\n")
