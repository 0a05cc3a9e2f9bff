"""Dollars beside tokens: a cohort's cost per model and format, and per stage (``consilium report``).

Each completed arm's cost is its trace's, at the prices every call recorded (consilium/models/pricing.py),
as generated: a response-cache hit costs what the call that produced it cost, as Table 7 counts its tokens.
A group's cost is known only when every completed arm in it is: one arm of a model without prices (or a
trace older than prices) makes the group's cost unknown (an empty cell, "–" in report.md), never $0. The
``priced`` column says how many of the group's arms have a known cost. Failed arms are left out, as in
Table 7 (their calls' cost is in arms.csv's ``cost_usd``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any, NamedTuple

from consilium.models.usage import STAGES, Usage
from consilium.reports.consilium.data import ArmCost, CohortData
from consilium.reports.consilium.judged import consilium_items, numbers, of_model, per_output
from consilium.reports.consilium.stats import POOLED, mean_sd, number

__all__ = ["CostPoint", "cost_by_stage", "cost_points", "cost_table", "unknown_cost"]

#: Dollars keep more decimals than the other tables' numbers: a scripted or small run costs fractions of a cent.
USD_DIGITS = 8


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, USD_DIGITS)


def _known(costs: Iterable[float | None]) -> list[float] | None:
    """Every cost, or None when any is unknown."""
    values = list(costs)
    return None if any(v is None for v in values) else [v for v in values if v is not None]


def _groups(data: CohortData) -> list[tuple[str, str, list[ArmCost]]]:
    """(model, format, arms) per model and format, then pooled per format (Table 7's rows)."""
    keys = sorted({(a.model, a.format) for a in data.costs})
    groups = [(m, f, [a for a in data.costs if (a.model, a.format) == (m, f)]) for m, f in keys]
    for fmt in sorted({f for _, f in keys}):
        groups.append((POOLED, fmt, [a for a in data.costs if a.format == fmt]))
    return groups


def _per_case(usages: list[Usage], field: str) -> float | None:
    return number(sum(getattr(u, field) for u in usages) / len(usages)) if usages else None


class CostPoint(NamedTuple):
    """One model × format of the cost-against-score figure: mean cost per case ± population SD (USD) over its
    ``cases``, and the mean ± population SD of its ``scores`` numeric C1–C8 conclusion scores (Table 7's
    ``mean_judge_score``)."""

    model: str
    format: str
    cases: int
    cost: float
    cost_sd: float
    score: float
    score_sd: float
    scores: int
    #: any arm's tokens counted with tiktoken (the server reported none): the dollars are an estimate
    estimated: bool = False


def cost_table(data: CohortData) -> list[dict[str, Any]]:
    """Per model and format (then pooled per format): completed ``cases``, ``priced`` (of them with a known
    cost), the mean cost per case and its population SD, the total over the cases, tokens per case (input,
    of them cached, output, of them reasoning) and the mean judge score (as Table 7)."""
    scores = [r for r in per_output(consilium_items(data)) if r["component"] == "conclusion"]
    table = []
    for model, fmt, arms in _groups(data):
        known = _known(a.cost for a in arms)
        usages = [a.usage for a in arms]
        judged = numbers(r for r in of_model(model, scores) if r["format"] == fmt)
        table.append({"model": model, "format": fmt, "cases": len(arms),
                      "priced": sum(a.cost is not None for a in arms),
                      "cost_usd_per_case": _usd(statistics.fmean(known)) if known else None,
                      "cost_usd_sd": _usd(statistics.pstdev(known)) if known else None,
                      "cost_usd_total": _usd(sum(known)) if known is not None and arms else None,
                      "input_tokens_per_case": _per_case(usages, "input_tokens"),
                      "cached_tokens_per_case": _per_case(usages, "cached_tokens"),
                      "output_tokens_per_case": _per_case(usages, "output_tokens"),
                      "reasoning_tokens_per_case": _per_case(usages, "reasoning_tokens"),
                      "mean_judge_score": mean_sd(judged)[0],
                      # any arm's tokens counted with tiktoken (not reported by the server): its dollars estimated
                      "estimated": any(a.usage.estimated for a in arms)})
    return table


def cost_by_stage(data: CohortData) -> list[dict[str, Any]]:
    """Per model and format (then pooled per format) and stage in pipeline order: the cases, the mean
    cost per case of that stage (unknown when any case's calls of it lack prices) and its tokens per case."""
    table = []
    for model, fmt, arms in _groups(data):
        present = {s for a in arms for s in a.stages}
        for stage in [s for s in STAGES if s in present] + sorted(present - set(STAGES)):
            known = _known(a.stages.get(stage, 0.0) for a in arms)
            usages = [a.stage_usage.get(stage, Usage()) for a in arms]
            table.append({"model": model, "format": fmt, "stage": stage, "cases": len(arms),
                          "cost_usd_per_case": _usd(sum(known) / len(arms)) if known is not None else None,
                          "input_tokens_per_case": _per_case(usages, "input_tokens"),
                          "output_tokens_per_case": _per_case(usages, "output_tokens"),
                          "estimated": any(u.estimated for u in usages)})
    return table


def cost_points(data: CohortData) -> list[CostPoint]:
    """The figure's points: each model × format whose cases all have a known cost and that has a numeric
    C1–C8 conclusion score (a point needs both axes)."""
    scores = [r for r in per_output(consilium_items(data)) if r["component"] == "conclusion"]
    points = []
    for model, fmt, arms in _groups(data):
        known = _known(a.cost for a in arms)
        judged = numbers(r for r in of_model(model, scores) if r["format"] == fmt)
        if model == POOLED or not known or not judged:
            continue
        points.append(CostPoint(model, fmt, len(arms), statistics.fmean(known), statistics.pstdev(known),
                                statistics.fmean(judged), statistics.pstdev(judged), len(judged),
                                any(a.usage.estimated for a in arms)))
    return points


def unknown_cost(data: CohortData) -> list[str]:
    """``"model, format"`` of each model × format with a completed arm whose cost is unknown (no point)."""
    return [f"{model}, {fmt}" for model, fmt, arms in _groups(data)
            if model != POOLED and _known(a.cost for a in arms) is None]
