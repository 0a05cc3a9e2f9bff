"""Judge-score tables of a consilium cohort, per model and pooled (ai-consilium.txt, Tables 6–9 and
8's per-model Tables 13–20).

Only per-output criteria (C1–C8) enter a mean (:mod:`consilium.reports.consilium.judged`); the
whole-case criteria have their own rows. Not-evaluable items are left out of every mean and counted in
the coverage tables (:mod:`consilium.reports.consilium.coverage`); the paired free-form vs structured
differences are in :mod:`consilium.reports.consilium.paired`.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from consilium.judges.rubric import COMPONENTS
from consilium.reports.consilium.data import CONSILIUM_RUBRIC, CohortData, replicate_key
from consilium.reports.consilium.files import rubric_criteria
from consilium.reports.consilium.judged import (
    component_formats,
    consilium_items,
    criterion_order,
    is_whole_case,
    models_and_pool,
    numbers,
    of_model,
    per_output,
    score_of,
)
from consilium.reports.consilium.replicates import has_replicates
from consilium.reports.consilium.stats import POOLED, mean_sd, number, percent
from consilium.runfolder.rows import JudgementRow

__all__ = ["output_means", "replicate_output_means", "scores_table", "table6", "table7", "table8", "table9"]


def table6(data: CohortData) -> list[dict[str, Any]]:
    """Table 6: per model and pooled, for each component and format, the mean ± population SD of all
    numeric C1–C8 scores (``n`` of them)."""
    rows = per_output(consilium_items(data))
    if not rows:
        return []
    table = []
    for model in models_and_pool(data):
        for component, fmt in component_formats(data):
            group = [r for r in of_model(model, rows) if r.component == component and r.format == fmt]
            if group:
                values = numbers(group)
                mean, sd = mean_sd(values)
                table.append({"model": model, "component": component, "format": fmt, "n": len(values),
                              "mean": mean, "sd": sd})
    return table


def table7(data: CohortData) -> list[dict[str, Any]]:
    """Table 7: per model and format (then pooled per format), completed ``cases``, the mean judge
    score (the mean of every numeric C1–C8 score of the conclusions; None when none was judged), and
    input, output and total tokens per case (each format's path includes the shared role assignment)."""
    scores = [r for r in per_output(consilium_items(data)) if r.component == "conclusion"]
    formats = sorted({f for _, f in data.tokens})
    groups = [((m, f), data.tokens[(m, f)]) for m, f in sorted(data.tokens)]
    for fmt in formats:
        pooled: Counter[str] = Counter()
        for (_, f), counter in data.tokens.items():
            if f == fmt:
                pooled.update(counter)
        groups.append(((POOLED, fmt), pooled))
    table = []
    for (model, fmt), counter in groups:
        cases = counter["cases"]
        inp = sum(v for k, v in counter.items() if k.endswith(":input")) / cases if cases else 0.0
        out = sum(v for k, v in counter.items() if k.endswith(":output")) / cases if cases else 0.0
        judged = numbers(r for r in of_model(model, scores) if r.format == fmt)
        table.append({"model": model, "format": fmt, "cases": cases, "mean_judge_score": mean_sd(judged)[0],
                      "input_tokens_per_case": number(inp), "output_tokens_per_case": number(out),
                      "total_tokens_per_case": number(inp + out)})
    return table


def scores_table(data: CohortData) -> list[dict[str, Any]]:
    """Per model and pooled, every rubric's criteria by component and format: ``n`` numeric scores,
    their mean and population SD, and whether the criterion is whole-case (its own row, never in a
    C1–C8 mean). The AI Consilium rows are Table 8 (pooled) and Tables 13–20 (per model). When some item
    carries a ``calibrated_score`` (``judge --calibration``), every row also has ``calibrated_n``,
    ``calibrated_mean`` and ``calibrated_sd`` over its calibrated items (docs/calibration.md)."""
    keys = {(r.rubric, r.component, r.format, r.criterion) for r in data.judgements}
    calibrated = any(r.calibrated_score is not None for r in data.judgements)
    rubrics = sorted({k[0] for k in keys})
    table = []
    for model in models_and_pool(data):
        cells: dict[tuple[str, str, str, str], list[JudgementRow]] = defaultdict(list)
        for r in of_model(model, data.judgements):  # each item in its cell once, in the items' order
            cells[(r.rubric, r.component, r.format, r.criterion)].append(r)
        for rubric in rubrics:
            criteria = rubric_criteria(rubric)
            for criterion in criterion_order(rubric, (k[3] for k in keys if k[0] == rubric)):
                for component in COMPONENTS:
                    for fmt in sorted({k[2] for k in keys if k[:2] == (rubric, component) and k[3] == criterion}):
                        group = cells.get((rubric, component, fmt, criterion), [])
                        if not group:
                            continue
                        values = numbers(group)
                        mean, sd = mean_sd(values)
                        known = criteria.get(criterion)
                        row: dict[str, Any] = {
                            "model": model, "rubric": rubric, "criterion": criterion,
                            "criterion_name": known.name if known else criterion,
                            "whole_case": any(is_whole_case(r) for r in group), "component": component,
                            "format": fmt, "n": len(values), "mean": mean, "sd": sd}
                        if calibrated:
                            adjusted = [r.calibrated_score for r in group if r.calibrated_score is not None]
                            c_mean, c_sd = mean_sd(adjusted)
                            row |= {"calibrated_n": len(adjusted), "calibrated_mean": c_mean, "calibrated_sd": c_sd}
                        table.append(row)
    return table


def table8(data: CohortData) -> list[dict[str, Any]]:
    """Table 8 (``model`` pooled) and Tables 13–20 (one model each): the AI Consilium rows of
    :func:`scores_table`."""
    return [r for r in scores_table(data) if r["rubric"] == CONSILIUM_RUBRIC]


def replicate_output_means(data: CohortData,
                           component: str = "conclusion") -> dict[tuple[str, str, str, str], float]:
    """Per (model, format, case, replicate; "" when the cohort has none): the mean of the numeric C1–C8
    scores of one component's output."""
    scores: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for row in per_output(consilium_items(data)):
        score = score_of(row)
        if row.component == component and score is not None:
            scores[(row.model, row.format, row.case_id, replicate_key(row))].append(score)
    return {k: statistics.fmean(v) for k, v in scores.items()}


def output_means(data: CohortData, component: str = "conclusion") -> dict[tuple[str, str, str], float]:
    """Per (model, format, case): the mean of the numeric C1–C8 scores of one component's output; in a
    cohort run in replicates, the mean of its replicates' output means (docs/cohorts.md, "Replicates")."""
    by_replicate: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for (model, fmt, case, _), mean in replicate_output_means(data, component).items():
        by_replicate[(model, fmt, case)].append(mean)
    return {k: statistics.fmean(v) for k, v in by_replicate.items()}


def _rounds_group(rounds: int) -> str:
    return "1" if rounds == 1 else "2" if rounds == 2 else ">=3"


def table9(data: CohortData) -> list[dict[str, Any]]:
    """Table 9: per model and pooled, by completed review rounds (1, 2, >=3): the ``outputs`` (final
    reports with a numeric C1–C8 score), the mean of their C1–C8 output means with population SD,
    the outputs whose mean is below 2 and their %, and the mean ± population SD of their numeric case
    complexity (criterion 10, ``case_complexity``). In a cohort run in replicates a replicate falls in the
    group of its own rounds, and the replicates of a (model, format, case) in one group are averaged first
    (its output mean and its complexity), so ``outputs`` counts (model, format, case)s and the added
    ``replicate_outputs`` the replicates' outputs averaged into them."""
    means = replicate_output_means(data)
    complexity = {(r.model, r.format, r.case_id, replicate_key(r)): r.score for r in consilium_items(data)
                  if r.component == "conclusion" and r.criterion == "case_complexity" and r.score is not None}
    replicated = has_replicates(data)
    table = []
    for model in models_and_pool(data):
        # rounds group → (model, format, case) → its replicates' keys in that group
        groups: dict[str, dict[tuple[str, str, str], list[tuple[str, str, str, str]]]] = \
            defaultdict(lambda: defaultdict(list))
        for arm in data.arms:
            key = (arm.model, arm.format, arm.case_id, replicate_key(arm))
            # an arm without review rounds (the single baseline) has no row here
            rounds = arm.get("rounds")
            if arm.completed and rounds is not None and key in means and model in (POOLED, arm.model):
                groups[_rounds_group(rounds)][key[:3]].append(key)
        for name in ("1", "2", ">=3"):
            if name not in groups:
                continue
            slots = groups[name].values()
            values = [statistics.fmean(means[k] for k in keys) for keys in slots]
            below = sum(v < 2 for v in values)
            mean, sd = mean_sd(values)
            rated = [[complexity[k] for k in keys if k in complexity] for keys in slots]
            c_mean, c_sd = mean_sd([statistics.fmean(r) for r in rated if r])
            row: dict[str, Any] = {"model": model, "rounds": name, "outputs": len(values), "mean_score": mean,
                                   "sd": sd, "below_2": below, "below_2_pct": percent(below, len(values)),
                                   "complexity_mean": c_mean, "complexity_sd": c_sd}
            if replicated:
                row["replicate_outputs"] = sum(len(keys) for keys in slots)
            table.append(row)
    return table
