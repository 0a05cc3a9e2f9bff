"""Structured − free-form judge scores of one protocol's arms, paired within (model, case), with
case-clustered bootstrap intervals (ai-consilium.txt's paired format comparison). In a cohort run in
replicates each format's score of a (model, case) is first averaged over its replicates, so a case counts
once however many replicates it has, and the bootstrap's clusters are still the cases (docs/cohorts.md,
"Replicates").
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from consilium.graphs.arms import arm_format
from consilium.judges.rubric import COMPONENTS
from consilium.reports.consilium.data import CONSILIUM_RUBRIC, CohortData, replicate_key
from consilium.reports.consilium.judged import consilium_items, criterion_order, models_and_pool, per_output, score_of
from consilium.reports.consilium.stats import POOLED, number
from consilium.stats import cluster_bootstrap

__all__ = ["MEAN_CRITERION", "failed_counts", "not_evaluable_counts", "paired_differences", "replicate_scores",
           "rubric_key_order"]

#: A score's place: (rubric, component, criterion) → (model, case) → format → replicate ("" when none) → score.
Scores = dict[tuple[str, str, str], dict[tuple[str, str], dict[str, dict[str, float]]]]

#: Not-evaluable items by place: (rubric, component, criterion) → (model, case) → format → how many.
Missing = dict[tuple[str, str, str], dict[tuple[str, str], dict[str, int]]]

#: The ``criterion`` of a paired difference of C1–C8 output means.
MEAN_CRITERION = "mean"


def replicate_scores(data: CohortData) -> Scores:
    """Every numeric score by its place (:data:`Scores`), each replicate apart; for the AI Consilium judge
    also each output's C1–C8 mean as criterion ``mean`` (one per replicate's output)."""
    scores: Scores = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    items: dict[tuple[str, str, str, str, str], list[float]] = defaultdict(list)
    for row in data.judgements:
        score = score_of(row)
        if score is not None:
            scores[(row.rubric, row.component, row.criterion)][(row.model, row.case_id)][row.format][
                replicate_key(row)] = score
    for row in per_output(consilium_items(data)):
        score = score_of(row)
        if score is not None:
            items[(row.component, row.model, row.format, row.case_id, replicate_key(row))].append(score)
    for (component, model, fmt, case, replicate), values in items.items():
        scores[(CONSILIUM_RUBRIC, component, MEAN_CRITERION)][(model, case)][fmt][replicate] = \
            statistics.fmean(values)
    return scores


def not_evaluable_counts(data: CohortData) -> Missing:
    """How many items the judge could not evaluate, by place (:data:`Missing`; replicates counted apart):
    a criterion never evaluable still has its row in the replicate and paired tables, with a count."""
    missing: Missing = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for row in data.judgements:
        if score_of(row) is None:
            missing[(row.rubric, row.component, row.criterion)][(row.model, row.case_id)][row.format] += 1
    return missing


def failed_counts(data: CohortData) -> dict[tuple[str, str, str], int]:
    """(model, format, case) → its arms that failed (each replicate's counted): no output, so no score in any
    row of the score tables; they are counted in each row's ``failed``, never dropped unseen."""
    failed: dict[tuple[str, str, str], int] = defaultdict(int)
    for arm in data.arms:
        if not arm.completed:
            failed[(arm.model, arm.format, arm.case_id)] += 1
    return failed


def failed_of(failed: dict[tuple[str, str, str], int], model: str, formats: Iterable[str]) -> int:
    """The failed arms of ``model`` (every model: pooled) in ``formats``."""
    chosen = set(formats)
    return sum(n for (m, fmt, _), n in failed.items() if model in (POOLED, m) and fmt in chosen)


def _judged_formats(pairs: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]], missing: Missing,
                    key: tuple[str, str, str], model: str) -> set[str]:
    """The formats in which the judge scored, or could not evaluate, ``key`` for ``model`` (or any: pooled)."""
    return {fmt for found in (pairs.get(key, {}), missing.get(key, {})) for (m, _), by_format in found.items()
            if model in (POOLED, m) for fmt in by_format}


def _pairs(data: CohortData) -> dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]]:
    """(rubric, component, criterion) → (model, case) → format → score, the mean over its replicates."""
    return {key: {where: {fmt: statistics.fmean(by_replicate.values()) for fmt, by_replicate in formats.items()}
                  for where, formats in places.items()}
            for key, places in replicate_scores(data).items()}


def rubric_key_order(keys: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(rubric, component, criterion) keys in table order: by rubric, component, the output ``mean``
    first, then the rubric's criteria in its order."""
    keys = set(keys)
    return sorted(keys, key=lambda k: (
        k[0], COMPONENTS.index(k[1]) if k[1] in COMPONENTS else len(COMPONENTS), k[2] != MEAN_CRITERION,
        criterion_order(k[0], [c for r, _, c in keys if r == k[0]]).index(k[2])))


def paired_differences(data: CohortData, *, bootstrap: int = 10_000, seed: int = 0) -> list[dict[str, Any]]:
    """Structured − free-form (the protocol's arms of each format), paired within (model, case), per
    model and pooled, for each rubric, component and criterion scored in both formats (and the C1–C8
    output mean, criterion ``mean``): ``cases`` paired (model, case) outputs, the mean difference and
    its 95 % interval from a bootstrap that resamples cases (all of a case's models together),
    ``bootstrap`` draws seeded by ``seed``, ``not_evaluable``: the items of either format the judge
    could not evaluate (a criterion with none paired has its row, its statistics empty), and ``failed``: the
    arms of either format that failed (no output to score)."""
    free, structured = arm_format(data.protocol, "free-form"), arm_format(data.protocol, "structured")
    if free is None or structured is None:
        return []
    pairs, missing, failed = _pairs(data), not_evaluable_counts(data), failed_counts(data)
    table = []
    for model in models_and_pool(data):
        failures = failed_of(failed, model, (free, structured))
        for rubric, component, criterion in rubric_key_order({*pairs, *missing}):
            clusters: dict[str, list[float]] = defaultdict(list)
            for (m, case), by_format in pairs.get((rubric, component, criterion), {}).items():
                if model in (POOLED, m) and free in by_format and structured in by_format:
                    clusters[case].append(by_format[structured] - by_format[free])
            unscored = sum(n for (m, _), by_format in missing.get((rubric, component, criterion), {}).items()
                           if model in (POOLED, m) for fmt, n in by_format.items() if fmt in (free, structured))
            if not clusters:
                # judged in both formats (a criterion of one format alone, as the roles', is never paired)
                if unscored and {free, structured} <= _judged_formats(pairs, missing, (rubric, component, criterion),
                                                                      model):
                    table.append({"model": model, "rubric": rubric, "component": component, "criterion": criterion,
                                  "cases": 0, "mean_difference": None, "ci_low": None, "ci_high": None,
                                  "not_evaluable": unscored, "failed": failures})
                continue
            diffs = [d for values in clusters.values() for d in values]
            low, high = cluster_bootstrap(clusters, draws=bootstrap, seed=seed,
                                          key=f"{model}|{rubric}|{component}|{criterion}")
            table.append({"model": model, "rubric": rubric, "component": component, "criterion": criterion,
                          "cases": len(diffs), "mean_difference": number(statistics.fmean(diffs)),
                          "ci_low": number(low), "ci_high": number(high), "not_evaluable": unscored,
                          "failed": failures})
    return table
