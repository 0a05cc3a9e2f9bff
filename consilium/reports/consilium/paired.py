"""Structured − free-form judge scores of one protocol's arms, paired within (model, case), with
case-clustered bootstrap intervals (ai-consilium.txt's paired format comparison).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from consilium.judges.rubric import COMPONENTS
from consilium.reports.consilium.arm_protocols import arm_format
from consilium.reports.consilium.data import CONSILIUM_RUBRIC, CohortData
from consilium.reports.consilium.judged import consilium_items, criterion_order, models_and_pool, score_of
from consilium.reports.consilium.scores import output_means
from consilium.reports.consilium.stats import POOLED, cluster_bootstrap, number

__all__ = ["MEAN_CRITERION", "paired_differences", "rubric_key_order"]

#: The ``criterion`` of a paired difference of C1–C8 output means.
MEAN_CRITERION = "mean"


def _pairs(data: CohortData) -> dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]]:
    """(rubric, component, criterion) → (model, case) → format → score; for the AI Consilium judge
    also the C1–C8 output mean as criterion ``mean``."""
    pairs: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]] = defaultdict(
        lambda: defaultdict(dict))
    for row in data.judgements:
        score = score_of(row)
        if score is not None:
            pairs[(row["rubric"], row["component"], row["criterion"])][(row["model"], row["case_id"])][
                row["format"]] = score
    for component in {r["component"] for r in consilium_items(data)}:
        for (model, fmt, case), mean in output_means(data, component).items():
            pairs[(CONSILIUM_RUBRIC, component, MEAN_CRITERION)][(model, case)][fmt] = mean
    return pairs


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
    ``bootstrap`` draws seeded by ``seed``."""
    free, structured = arm_format(data.protocol, "free-form"), arm_format(data.protocol, "structured")
    if free is None or structured is None:
        return []
    pairs = _pairs(data)
    table = []
    for model in models_and_pool(data):
        for rubric, component, criterion in rubric_key_order(pairs):
            clusters: dict[str, list[float]] = defaultdict(list)
            for (m, case), by_format in pairs[(rubric, component, criterion)].items():
                if model in (POOLED, m) and free in by_format and structured in by_format:
                    clusters[case].append(by_format[structured] - by_format[free])
            if not clusters:
                continue
            diffs = [d for values in clusters.values() for d in values]
            low, high = cluster_bootstrap(clusters, draws=bootstrap, seed=seed,
                                          key=f"{model}|{rubric}|{component}|{criterion}")
            table.append({"model": model, "rubric": rubric, "component": component, "criterion": criterion,
                          "cases": len(diffs), "mean_difference": number(statistics.fmean(diffs)),
                          "ci_low": number(low), "ci_high": number(high)})
    return table
