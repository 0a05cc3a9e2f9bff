"""The run folder (consilium/runfolder/): the only code that spells a run's file names; its tables read into
typed rows and frames, with a failed arm and a not-evaluable item kept; its writes atomic, replacing only
files of the kind it writes.

The cohort is tests/support/cohort_fixture.py's, run by the real CLI: two scripted panel models × two formats
× six cases, one arm failed, five judge items not evaluable, every score varied; the expected values are
computed here from the fixture's constants and from the files read with the csv and json modules.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from support.cohort_fixture import APPLIES, CASES, COMPONENTS, FAILED, FORMATS, MODELS, NOT_EVALUABLE, score

from consilium.errors import UserError
from consilium.runfolder import ArmRow, JudgementRow, RunFolder

PACKAGE = Path(__file__).resolve().parents[2] / "consilium"
#: The run folder's file names: a module outside consilium/runfolder/ that builds, globs or matches a path
#: with one of them knows the layout, which only the run folder may.
FILE_NAMES = (".trace.json", ".judge.", "arms.csv", "arms.jsonl", "judgements.csv", "manifest.json",
              ".otb-reward.json", "ablation.json")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _spells_a_file_name(text: str) -> bool:
    """A string constant (or an f-string's literal part) that is a path, a glob or a suffix naming one of the
    files: no whitespace in it (prose, a message or a help text naming a file for its reader, is not code that
    finds the file), the name not part of a longer word (``missing_arms.csv`` is a report's own)."""
    if any(ch.isspace() for ch in text):
        return False
    for name in FILE_NAMES:
        at = text.find(name)
        while at >= 0:
            if name.startswith(".") or at == 0 or not (text[at - 1].isalnum() or text[at - 1] in "_-"):
                return True
            at = text.find(name, at + 1)
    return False


def modules_spelling_file_names(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        if any(isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
               and _spells_a_file_name(node.value) for node in ast.walk(tree)):
            found.append(path.relative_to(package).as_posix())
    return found


def test_only_the_run_folder_spells_its_file_names() -> None:
    """Every writer, the ones below the run folder's layer included (the single-run writer, the cohort manifest's
    model, the board's reward record), takes the names from consilium/runfolder/layout.py, which imports nothing
    of the package so that any layer may (tests/project/test_layers.py)."""
    spelling = modules_spelling_file_names(PACKAGE)
    outside = [m for m in spelling if not m.startswith("runfolder/")]
    assert outside == [], f"these modules spell a run folder's file name; take it from consilium.runfolder: {outside}"
    assert "runfolder/layout.py" in spelling
    assert len({m.split("/")[0] for m in spelling}) == 1  # the run folder's package alone
    assert spelling == ["runfolder/layout.py"]  # and in it, the layout alone


def test_the_file_name_check_catches_paths_and_globs_not_prose() -> None:
    assert _spells_a_file_name("arms.csv")
    assert _spells_a_file_name("*.judge.")
    assert _spells_a_file_name(".trace.json")
    assert _spells_a_file_name(".structured.judge.ai-consilium.json")
    assert _spells_a_file_name("/manifest.json")
    assert _spells_a_file_name(".otb-reward.json")
    assert _spells_a_file_name("ablation.json")
    assert not _spells_a_file_name("missing_arms.csv")
    assert not _spells_a_file_name(": no arms.csv (run `consilium cohort` first)")


@pytest.fixture(scope="module")
def cohort(fixture_cohort: Path) -> Path:
    """The shared fixture cohort (tests/conftest.py), only read here."""
    return fixture_cohort


def raw_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_arms_read_as_typed_rows_with_the_failed_arm(cohort: Path) -> None:
    folder = RunFolder.open(cohort)
    arms = folder.arms()
    raw = raw_csv(cohort / "arms.csv")
    assert len(arms) == len(MODELS) * len(FORMATS) * len(CASES) == len(raw) == 24
    for row, text in zip(arms, raw, strict=True):
        assert isinstance(row, ArmRow)
        assert (row.case_id, row.format, row.status) == (text["case_id"], text["format"], text["status"])
        assert row.resumed is False and isinstance(row.cost_estimated, bool)
        if row.completed:
            assert row.input_tokens == int(text["input_tokens"]) > 0
            assert row.wall_s == float(text["wall_s"])
            assert row.get("rounds") == int(text["rounds"])  # a protocol's own column, typed too
            assert isinstance(row.get("r1_dissent"), float)
    failed = [r for r in arms if not r.completed]
    assert len(failed) == 1
    (one,) = failed
    assert (one.model_spec.endswith(f"{FAILED[0]}.json"), one.case_id, one.format) == (True, FAILED[1], FAILED[2])
    assert one.status == "failed" and one.error and one.failed_stage == "synthesis"
    assert one.input_tokens == int(raw[arms.index(one)]["input_tokens"])  # the calls it made before it failed
    # the failed arm has no trace of its own; it is named by its spec's other arms' model id
    assert one.model == FAILED[0]


def test_the_manifest_reads_typed_with_the_cohorts_counts(cohort: Path) -> None:
    manifest = RunFolder.open(cohort).manifest()
    assert manifest.run_id == cohort.name and manifest.status == "completed"
    arms = len(MODELS) * len(FORMATS) * len(CASES)
    assert manifest.counts == {"arms": arms, "completed": arms - 1, "failed": 1, "resumed": 0}
    assert RunFolder.open(cohort).manifest_data()["run_id"] == cohort.name


def test_typed_rows_round_trip_to_the_same_table(cohort: Path, tmp_path: Path) -> None:
    copy = RunFolder.open(shutil.copytree(cohort, tmp_path / "copy"))
    header = tuple(next(csv.reader((cohort / "arms.csv").open(encoding="utf-8"))))
    copy.write_arms(copy.arms(named=False), header)
    assert (copy.path / "arms.csv").read_bytes() == (cohort / "arms.csv").read_bytes()
    judged_header = tuple(next(csv.reader((cohort / "judgements.csv").open(encoding="utf-8"))))
    copy.write_judgements(copy.judgements(), judged_header)
    assert (copy.path / "judgements.csv").read_bytes() == (cohort / "judgements.csv").read_bytes()


def expected_items() -> dict[tuple[str, str, str, str, str], int | None]:
    """Every judge item of every completed arm, by (model, format, case, component, criterion): its score."""
    return {(m, f, k, component, criterion): score(m, f, k, component, criterion)
            for m in MODELS for f in FORMATS for k in CASES if (m, k, f) != FAILED
            for component in COMPONENTS[f] for criterion in APPLIES[component]}


def test_judgement_rows_hold_every_item_and_the_not_evaluable_ones(cohort: Path) -> None:
    rows = RunFolder.open(cohort).judgement_rows()
    assert all(isinstance(r, JudgementRow) for r in rows)
    got = {(r.model, r.format, r.case_id, r.component, r.criterion): r for r in rows}
    expected = expected_items()
    assert len(rows) == len(got) == len(expected)
    assert {k: r.score for k, r in got.items()} == {k: None if v is None else float(v) for k, v in expected.items()}
    assert {k for k, r in got.items() if r.not_evaluable} == NOT_EVALUABLE
    assert all(r.reason for r in rows if r.not_evaluable)
    assert {r.whole_case for r in rows if r.criterion == "overall_quality"} == {True}
    assert {r.whole_case for r in rows if r.criterion == "c1"} == {False}


def calls_by_hand(cohort: Path) -> tuple[int, int]:
    """The panel's calls in every trace and the judges' in every record, read as plain JSON."""
    panel = judge = 0
    for row in raw_csv(cohort / "arms.csv"):
        if not row["trace"]:
            continue
        trace = cohort / row["trace"]
        panel += len(json.loads(trace.read_text())["calls"])
        stem = trace.name.removesuffix(".trace.json")
        judge += sum(len(json.loads(p.read_text())["calls"]) for p in trace.parent.glob(f"{stem}.judge.*.json"))
    return panel, judge


def test_call_rows_hold_every_call_of_the_panel_and_the_judges(cohort: Path) -> None:
    calls = RunFolder.open(cohort).call_rows()
    panel, judge = calls_by_hand(cohort)
    assert sum(c["source"] == "panel" for c in calls) == panel > 0
    assert sum(c["source"] == "judge:ai-consilium" for c in calls) == judge > 0
    assert len(calls) == panel + judge
    # the failed arm's calls up to its failure are there, and it was not judged
    failed = [c for c in calls if (c["model"], c["case_id"], c["format"]) == FAILED]
    assert failed and {c["status"] for c in failed} == {"failed"} and {c["source"] for c in failed} == {"panel"}


def test_frames_have_a_row_per_arm_call_and_item(cohort: Path) -> None:
    pytest.importorskip("pandas")
    folder = RunFolder.open(cohort)
    arms = folder.arms_frame()
    assert len(arms) == 24 and {"case_id", "model", "status", "input_tokens", "rounds"} <= set(arms.columns)
    assert list(arms.loc[arms.status == "failed", "case_id"]) == [FAILED[1]]
    calls = folder.calls_frame()
    panel, judge = calls_by_hand(cohort)
    assert (calls.source == "panel").sum() == panel and len(calls) == panel + judge
    items = folder.judgements_frame()
    assert len(items) == len(expected_items())
    assert int(items.not_evaluable.sum()) == len(NOT_EVALUABLE)
    assert int(items.score.isna().sum()) == len(NOT_EVALUABLE)


def test_a_frame_without_pandas_is_one_line_naming_the_extra(cohort: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A machine without the extra: Python's import system refuses pandas (a None entry in sys.modules).
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(UserError, match=r"pip install 'consilium\[analysis\]'"):
        RunFolder.open(cohort).arms_frame()


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_partial_one(cohort: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    copy = RunFolder.open(shutil.copytree(cohort, tmp_path / "copy"))
    before = copy.arms_csv.read_bytes()
    rows = copy.arms(named=False)

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(UserError, match=r"arms\.csv: cannot write"):
        copy.write_arms(rows[:3])
    assert copy.arms_csv.read_bytes() == before
    assert [p.name for p in copy.path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_run_folder_refuses_to_replace_a_file_it_did_not_write(cohort: Path, tmp_path: Path) -> None:
    copy = RunFolder.open(shutil.copytree(cohort, tmp_path / "copy"))
    rows = copy.judgements()
    copy.judgements_csv.write_text("my notes on the judges\n")
    with pytest.raises(UserError, match=r"judgements\.csv: exists and is not a table"):
        copy.write_judgements(rows)
    assert copy.judgements_csv.read_text() == "my notes on the judges\n"
    copy.judgements_csv.unlink()
    copy.judgements_csv.symlink_to(copy.arms_csv)
    with pytest.raises(UserError, match="symbolic link"):
        copy.write_judgements(rows)
    # A trace's place holding a judgement record is not replaced by a trace; its own table is.
    (arm,) = [a for a in copy.arms() if a.completed][:1]
    trace = copy.trace_location(arm.trace)
    (record, judgement), *_ = copy.judgements_of(trace)
    with pytest.raises(UserError, match="is not a trace"):
        copy.write_trace(record, copy.read_trace(trace))
    assert copy.write_judgement(trace, judgement) == record
    assert copy.write_arms(copy.arms(named=False)) == copy.arms_csv


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such run folder"):
        RunFolder.open(tmp_path / "absent")
    with pytest.raises(UserError, match=r"no arms\.csv"):
        RunFolder.open(tmp_path).arms()
