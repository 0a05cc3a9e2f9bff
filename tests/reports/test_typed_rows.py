"""The paper's tables read a cohort's judgements.csv as typed rows: a score of 0 is a score, an empty score is
not evaluable, ``True``/``False`` are flags and an empty ``whole_case`` is the shipped rubric's. The cohort is
tests/support/cohort_fixture.py's, its judgement records set aside and its judgements.csv written by hand with
cells as a hand-edited or older file holds them; every expected number is worked out below from those cells."""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path

import pytest
from support.cohort_fixture import CASES, FAILED, MODELS
from support.cohorts import copy_cohort

from consilium.reports.consilium.coverage import table11
from consilium.reports.consilium.data import judgement_coverage, load_cohort_data
from consilium.reports.consilium.outcomes import table3
from consilium.reports.consilium.paired import paired_differences
from consilium.reports.consilium.scores import scores_table, table6

HEADER = ("case_id", "model", "format", "rubric", "component", "criterion", "score", "not_evaluable", "reason",
          "whole_case")
#: (model, format, case, criterion, score cell, not_evaluable cell, whole_case cell): zeros written as "0" and
#: "0.0", not-evaluable items with an empty score, whole-case criteria once named and once left empty.
CELLS = (
    ("panel-a", "free-form", "k1", "c1", "0", "False", "False"),
    ("panel-a", "free-form", "k1", "c2", "", "True", "False"),
    ("panel-a", "free-form", "k1", "c3", "2.0", "False", ""),
    ("panel-a", "free-form", "k1", "case_complexity", "0", "False", ""),
    ("panel-a", "structured", "k1", "c1", "3", "False", "False"),
    ("panel-a", "structured", "k1", "c2", "0.0", "False", ""),
    ("panel-a", "structured", "k1", "c3", "", "True", "False"),
    ("panel-b", "free-form", "k2", "c1", "1", "False", ""),
    ("panel-b", "free-form", "k2", "c2", "", "True", ""),
    ("panel-b", "free-form", "k2", "overall_quality", "3", "False", "True"),
)


@pytest.fixture(scope="module")
def run_dir(fixture_cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy: Path = copy_cohort(fixture_cohort, tmp_path_factory.mktemp("typed_rows"))
    for record in copy.rglob("*.judge.*.json"):
        record.unlink()  # judgements.csv is read only when no record is left
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HEADER)
    for model, fmt, case, criterion, score, not_evaluable, whole_case in CELLS:
        writer.writerow((case, model, fmt, "ai-consilium", "conclusion", criterion, score, not_evaluable,
                         "no reference" if not score else "", whole_case))
    (copy / "judgements.csv").write_text(buffer.getvalue(), encoding="utf-8")
    return copy


def test_a_zero_is_a_score_an_empty_cell_is_not_evaluable_and_flags_are_bools(run_dir: Path) -> None:
    data = load_cohort_data(run_dir)
    assert data.judgements_from == "judgements.csv"
    assert [r.score for r in data.judgements] == [0.0, None, 2.0, 0.0, 3.0, 0.0, None, 1.0, None, 3.0]
    assert [r.not_evaluable for r in data.judgements] == [c[5] == "True" for c in CELLS]
    # an empty whole_case cell is the shipped rubric's: c1–c8 are per output, the others whole-case
    assert [r.whole_case for r in data.judgements] == [
        {"True": True, "False": False}.get(c[6], c[3] in ("case_complexity", "overall_quality")) for c in CELLS]
    assert [r.protocol for r in data.judgements] == ["consilium"] * len(CELLS)  # from each row's arm


def test_coverage_counts_a_zero_as_judged_and_an_empty_score_as_not_evaluable(run_dir: Path) -> None:
    data = load_cohort_data(run_dir)
    rows = {(r["model"], r["component"], r["format"]): r for r in table11(data)}
    # panel-a free-form: c1 "0" and c3 "2.0" judged, c2 not evaluable; the whole-case item is in no C1–C8 count
    for model, fmt, judged, unscored in (("panel-a", "free-form", 2, 1), ("panel-a", "structured", 2, 1),
                                         ("panel-b", "free-form", 1, 1), ("panel-b", "structured", 0, 0),
                                         ("pooled", "free-form", 3, 2), ("pooled", "structured", 2, 1)):
        # every arm of the model and format in arms.csv, the failed one (panel-b, k6, structured) included
        arms = len(CASES) * sum(1 for m in MODELS if model in ("pooled", m))
        row = rows[(model, "conclusion", fmt)]
        assert (row["judged"], row["not_evaluable"], row["opportunities"]) == (judged, unscored, arms * 8)
        assert row["missing"] == arms * 8 - judged - unscored
    assert FAILED == ("panel-b", "k6", "structured")
    [coverage] = judgement_coverage(data)
    assert (coverage["items"], coverage["judged"], coverage["not_evaluable"]) == (10, 7, 3)


def test_the_means_leave_out_not_evaluable_items_and_whole_case_criteria_but_keep_zeros(run_dir: Path) -> None:
    data = load_cohort_data(run_dir)
    means = {(r["model"], r["format"]): (r["n"], r["mean"]) for r in table6(data) if r["component"] == "conclusion"}
    assert means[("panel-a", "free-form")] == (2, pytest.approx(statistics.fmean([0, 2])))
    assert means[("panel-a", "structured")] == (2, pytest.approx(statistics.fmean([3, 0])))
    assert means[("pooled", "free-form")] == (3, pytest.approx(statistics.fmean([0, 2, 1])))
    criteria = {(r["model"], r["format"], r["criterion"]): r for r in scores_table(data)}
    c1 = criteria[("pooled", "free-form", "c1")]
    assert (c1["n"], c1["mean"], c1["sd"]) == (2, pytest.approx(0.5), pytest.approx(statistics.pstdev([0, 1])))
    complexity = criteria[("panel-a", "free-form", "case_complexity")]
    assert (complexity["whole_case"], complexity["n"], complexity["mean"]) == (True, 1, 0.0)
    assert criteria[("panel-b", "free-form", "overall_quality")]["whole_case"] is True
    assert criteria[("panel-a", "free-form", "c3")]["whole_case"] is False  # empty cell, per-output criterion
    assert "calibrated_n" not in c1  # no calibrated_score column: no calibrated cells


def test_paired_differences_pair_zeros_and_count_the_not_evaluable(run_dir: Path) -> None:
    data = load_cohort_data(run_dir)
    rows = {(r["model"], r["criterion"]): r for r in paired_differences(data, bootstrap=20)
            if r["component"] == "conclusion"}
    # panel-a k1: c1 structured 3 − free-form 0; c2 free-form not evaluable; c3 structured not evaluable
    assert (rows[("panel-a", "c1")]["cases"], rows[("panel-a", "c1")]["mean_difference"]) == (1, 3.0)
    assert (rows[("panel-a", "c2")]["cases"], rows[("panel-a", "c2")]["not_evaluable"]) == (0, 1)
    assert (rows[("panel-a", "c3")]["cases"], rows[("panel-a", "c3")]["not_evaluable"]) == (0, 1)
    # the C1–C8 output means: structured (3 + 0) / 2 − free-form (0 + 2) / 2
    assert rows[("panel-a", "mean")]["mean_difference"] == pytest.approx(1.5 - 1.0)
    assert ("panel-b", "c1") not in rows  # scored in one format only: never paired


def test_a_round_one_dissent_of_0_0_is_a_unanimous_panel_not_a_missing_one(run_dir: Path) -> None:
    """arms.csv's ``r1_dissent`` is read as a number: ``0.0`` (no role dissenting) counts as unanimous and enters
    the mean; an empty cell (the failed arm's) enters neither."""
    cells = list(csv.DictReader((run_dir / "arms.csv").read_text(encoding="utf-8").splitlines()))
    rows = {(r["model"], r["format"]): r for r in table3(load_cohort_data(run_dir))}
    for model in (*MODELS, "pooled"):
        for fmt in ("free-form", "structured"):
            done = [c for c in cells if c["status"] == "completed" and c["format"] == fmt
                    and model in ("pooled", c["model"])]
            dissent = [float(c["r1_dissent"]) for c in done if c["r1_dissent"] != ""]
            row = rows[(model, fmt)]
            assert row["r1_unanimous"] == sum(d == 0.0 for d in dissent) > 0
            assert row["r1_dissent_mean_pct"] == pytest.approx(100 * statistics.fmean(dissent), abs=0.01)
            assert row["mean_rounds"] == pytest.approx(statistics.fmean(int(c["rounds"]) for c in done), abs=0.01)
