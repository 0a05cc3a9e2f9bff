"""How much a cohort's judge scores move between replicates (an experiment's ``replicates:``), and the
score means with intervals that account for them.

A replicate is the same arm (case, model, format) run again with another seed. Per (model, format, case)
and score (rubric, component, criterion; the C1–C8 output mean as criterion ``mean``) the replicates'
scores have a sample SD (n − 1: the replicates are a sample of the runs the seed could give). Over the
cases that is summarised twice: ``sd_mean``, the mean of the per-case SDs (easy to read, biased low for
few replicates), and ``sd_pooled``, the square root of the per-case variances pooled by their degrees of
freedom, Σ(nᵢ − 1)·sᵢ² / Σ(nᵢ − 1) (the estimate of the within-case, between-replicate SD). The score's
``mean`` averages each case's replicates first, then the cases; its interval is the case-clustered
bootstrap of :func:`~consilium.stats.cluster_bootstrap` over those case means, so the
replicates are nested in their case and never count as independent cases. docs/cohorts.md, "Replicates".
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from consilium.reports.consilium.data import CohortData
from consilium.reports.consilium.judged import models_and_pool
from consilium.reports.consilium.paired import (
    failed_counts,
    failed_of,
    not_evaluable_counts,
    replicate_scores,
    rubric_key_order,
)
from consilium.reports.consilium.stats import POOLED, number
from consilium.stats import cluster_bootstrap

__all__ = ["REPLICATE_NOTES", "has_replicates", "replicate_case_sd", "replicate_note", "replicate_sd"]

_POOLED_ARMS = "replicates pooled: each replicate is an arm, counted in n"
_POOLED_SCORES = "replicates pooled: every replicate's scores, counted in n"
_AVERAGED = "replicates averaged within (model, format, case) first"
#: How each table of ``compare`` and ``report`` (by file name) treats a cohort's replicates: its title says it
#: in a cohort run in replicates (docs/cohorts.md, "Replicates").
REPLICATE_NOTES = {
    "table3_outcomes": _POOLED_ARMS, "outcomes": _POOLED_ARMS,
    "table4_vote_transitions": "replicates pooled: each replicate's transitions counted, arms = replicate arms",
    "table6_components": _POOLED_SCORES, "scores": _POOLED_SCORES, "table8_criteria": _POOLED_SCORES,
    "table7_tokens": "replicates pooled: cases = replicate arms, the judge score over every replicate's scores",
    "tokens": "replicates pooled: cases = replicate arms, the judge score over every replicate's scores",
    "table9_rounds": "a replicate in the group of its own rounds; replicates averaged within (model, format, case) "
                     "in a group (replicate_outputs: the replicates averaged)",
    "table10_applicability": _POOLED_ARMS, "table11_coverage": _POOLED_ARMS,
    "table12_criterion_coverage": _POOLED_ARMS,
    "paired_differences": _AVERAGED,
    "consilium_vs_single": f"each protocol's {_AVERAGED}",
    "fig2_role_categories": "replicates pooled: each replicate's panel counted",
    "fig2_panel_sizes": "replicates pooled: each replicate's panel counted",
    "role_label_mapping": "replicates pooled: each replicate's panel counted",
    "rubric_summary": _POOLED_SCORES,
    "cost": "replicates pooled: cases = replicate arms", "cost_by_stage": "replicates pooled: cases = replicate arms",
    "cost_by_case": "replicates summed: arms = a case's replicate arms",
}


def has_replicates(data: CohortData) -> bool:
    """Whether the arms were run in replicates (arms.csv has a ``replicate`` index)."""
    return any(arm.replicate is not None for arm in data.arms)


def replicate_note(name: str, title: str, data: CohortData) -> str:
    """A table's title, with how it treats the replicates (:data:`REPLICATE_NOTES`) when the cohort has them;
    the title unchanged otherwise."""
    note = REPLICATE_NOTES.get(name)
    return f"{title} ({note})" if note and has_replicates(data) else title


def _sd(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) >= 2 else None


def replicate_case_sd(data: CohortData) -> list[dict[str, Any]]:
    """Per model, format, score and case: the ``replicates`` scored, their mean and sample SD (empty
    with fewer than two), the items ``not_evaluable`` (a place with none scored has its row, empty), and the
    replicates that ``failed`` (no output to score)."""
    scores, missing, failed = replicate_scores(data), not_evaluable_counts(data), failed_counts(data)
    table = []
    for key in rubric_key_order({*scores, *missing}):
        places, unscored = scores.get(key, {}), missing.get(key, {})
        for model, case in sorted({*places, *unscored}):
            formats, absent = places.get((model, case), {}), unscored.get((model, case), {})
            for fmt in sorted({*formats, *absent}):
                values = list(formats.get(fmt, {}).values())
                table.append({"model": model, "format": fmt, "rubric": key[0], "component": key[1],
                              "criterion": key[2], "case_id": case, "replicates": len(values),
                              "mean": number(statistics.fmean(values)) if values else None,
                              "sd": number(_sd(values)), "not_evaluable": absent.get(fmt, 0),
                              "failed": failed.get((model, fmt, case), 0)})
    return table


def replicate_sd(data: CohortData, *, bootstrap: int = 10_000, seed: int = 0) -> list[dict[str, Any]]:
    """Per model (and pooled), format and score: the ``cases`` scored and the scored ``replicates`` in all,
    the mean of the case means with its case-clustered 95 % interval (``bootstrap`` draws seeded by
    ``seed`` and the row), and the between-replicate SD: ``sd_mean`` and ``sd_pooled`` over the
    ``cases_with_sd`` cases with at least two replicates scored; ``not_evaluable``: the items the judge
    could not evaluate (a score never evaluable has its row, its statistics empty); ``failed``: the arms of
    the model and format that failed (no output to score, so in no mean)."""
    scores, missing, failed = replicate_scores(data), not_evaluable_counts(data), failed_counts(data)
    formats = sorted({fmt for found in (scores, missing) for places in found.values() for by in places.values()
                      for fmt in by})
    table = []
    for model in models_and_pool(data):
        for fmt in formats:
            for rubric, component, criterion in rubric_key_order({*scores, *missing}):
                clusters: dict[str, list[float]] = defaultdict(list)
                sds: list[tuple[int, float]] = []
                replicates = 0
                unscored = sum(by_format.get(fmt, 0) for (m, _), by_format in
                               missing.get((rubric, component, criterion), {}).items() if model in (POOLED, m))
                for (m, case), by_format in scores.get((rubric, component, criterion), {}).items():
                    values = list(by_format.get(fmt, {}).values())
                    if model not in (POOLED, m) or not values:
                        continue
                    clusters[case].append(statistics.fmean(values))
                    replicates += len(values)
                    sd = _sd(values)
                    if sd is not None:
                        sds.append((len(values), sd))
                if not clusters:
                    if unscored:
                        table.append({"model": model, "format": fmt, "rubric": rubric, "component": component,
                                      "criterion": criterion, "cases": 0, "replicates": 0, "mean": None,
                                      "ci_low": None, "ci_high": None, "cases_with_sd": 0, "sd_mean": None,
                                      "sd_pooled": None, "not_evaluable": unscored,
                                      "failed": failed_of(failed, model, [fmt])})
                    continue
                means = [v for c in sorted(clusters) for v in clusters[c]]
                low, high = cluster_bootstrap(clusters, draws=bootstrap, seed=seed,
                                              key=f"replicates|{model}|{fmt}|{rubric}|{component}|{criterion}")
                freedom = sum(n - 1 for n, _ in sds)
                table.append({
                    "model": model, "format": fmt, "rubric": rubric, "component": component, "criterion": criterion,
                    "cases": len(clusters), "replicates": replicates, "mean": number(statistics.fmean(means)),
                    "ci_low": number(low), "ci_high": number(high), "cases_with_sd": len(sds),
                    "sd_mean": number(statistics.fmean(sd for _, sd in sds)) if sds else None,
                    "sd_pooled": number(math.sqrt(sum((n - 1) * sd * sd for n, sd in sds) / freedom))
                    if freedom else None, "not_evaluable": unscored, "failed": failed_of(failed, model, [fmt])})
    return table
