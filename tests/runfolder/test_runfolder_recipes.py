"""Recipes (docs/architecture.md): an analysis and an export added from outside the package, reading a run
through :class:`consilium.runfolder.RunFolder` alone, never its file names.

Each recipe is the code a user would write, here as a function of the test module; the cohort is
tests/support/cohort_fixture.py's (two models × two formats × six cases, one failed arm, five items not
evaluable), and the expected numbers are computed from the fixture's constants by hand.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from support.cohort_fixture import APPLIES, CASES, COMPONENTS, FAILED, FORMATS, MODELS, NOT_EVALUABLE, score

from consilium.runfolder import RunFolder


@pytest.fixture(scope="module")
def cohort(fixture_cohort: Path) -> Path:
    """The shared fixture cohort (tests/conftest.py), only read here."""
    return fixture_cohort


def by_hand() -> dict[tuple[str, str, str], list[int | None]]:
    """Each completed arm's (model, format, case) item scores, None where not evaluable."""
    return {(m, f, k): [score(m, f, k, component, criterion) for component in COMPONENTS[f]
                        for criterion in APPLIES[component]]
            for m in MODELS for f in FORMATS for k in CASES if (m, k, f) != FAILED}


# The analysis recipe: a mean score per model, over the evaluable items, from the folder's judge items.
def mean_score_per_model(run_dir: Path) -> dict[str, float]:
    scores: dict[str, list[float]] = defaultdict(list)
    for item in RunFolder.open(run_dir).judgement_rows():
        if not item.not_evaluable and item.score is not None:
            scores[item.model].append(item.score)
    return {model: statistics.fmean(values) for model, values in scores.items()}


def test_an_analysis_added_from_outside_the_package_reads_the_run_folder(cohort: Path) -> None:
    expected = {m: statistics.fmean(s for (model, _, _), scores in by_hand().items() if model == m
                                    for s in scores if s is not None) for m in MODELS}
    got = mean_score_per_model(cohort)
    assert got == pytest.approx(expected)
    assert got["panel-a"] != pytest.approx(got["panel-b"])  # the fixture's scores differ by model


def test_the_same_analysis_on_the_run_folders_frame(cohort: Path) -> None:
    pytest.importorskip("pandas")
    items = RunFolder.open(cohort).judgements_frame()
    means = items[~items.not_evaluable].groupby("model").score.mean().to_dict()
    assert means == pytest.approx(mean_score_per_model(cohort))


# The export recipe: one line per arm with its judged and not-evaluable items and mean score, as CSV.
def export_arm_scores(run_dir: Path, out: Path) -> Path:
    folder = RunFolder.open(run_dir)
    items: dict[tuple[str, str, str], list[float | None]] = defaultdict(list)
    for item in folder.judgement_rows():
        items[(item.model, item.format, item.case_id)].append(None if item.not_evaluable else item.score)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["case_id", "model", "format", "status", "items", "not_evaluable", "mean_score"])
        for arm in folder.arms():
            mine = items.get((arm.model, arm.format, arm.case_id), [])
            evaluable = [s for s in mine if s is not None]
            writer.writerow([arm.case_id, arm.model, arm.format, arm.status, len(mine), len(mine) - len(evaluable),
                             f"{statistics.fmean(evaluable):.4f}" if evaluable else ""])
    return out


def test_an_export_added_from_outside_the_package_writes_the_run_folders_rows(cohort: Path, tmp_path: Path) -> None:
    with export_arm_scores(cohort, tmp_path / "arm_scores.csv").open(encoding="utf-8") as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == len(MODELS) * len(FORMATS) * len(CASES)
    expected = by_hand()
    unevaluable = defaultdict(int)
    for model, fmt, case, _, _ in NOT_EVALUABLE:
        unevaluable[(model, fmt, case)] += 1
    for line in lines:
        key = (line["model"], line["format"], line["case_id"])
        if (key[0], key[2], key[1]) == FAILED:  # the failed arm is a line of its own, with nothing judged
            assert [line[c] for c in ("status", "items", "not_evaluable", "mean_score")] == ["failed", "0", "0", ""]
            continue
        scores = [s for s in expected[key] if s is not None]
        assert line["status"] == "completed"
        assert int(line["items"]) == len(expected[key])
        assert int(line["not_evaluable"]) == unevaluable[key]
        assert float(line["mean_score"]) == pytest.approx(statistics.fmean(scores), abs=1e-4)
    assert sum(int(line["not_evaluable"]) for line in lines) == len(NOT_EVALUABLE)
