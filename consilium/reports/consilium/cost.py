"""Dollars beside tokens: a cohort's cost per model and format, and per stage (``consilium report``).

Each completed arm's cost is its trace's, at the prices every call recorded (consilium/models/pricing.py),
as generated: a response-cache hit costs what the call that produced it cost, as Table 7 counts its tokens.
A group's cost is known only when every completed arm in it is: one arm of a model without prices (or a
trace older than prices) makes the group's cost unknown (an empty cell, "–" in report.md), never $0. The
``priced`` column says how many of the group's arms have a known cost. Failed arms are left out, as in
Table 7 (their calls' cost is in arms.csv's ``cost_usd``).

Judging costs too, and is shown beside the panel's: each group's ``judge_*`` columns sum every judge call
the judgement records of its arms hold (every rubric, each judge of a jury, the calls of not-evaluable
items included; consilium/judges/cost.py), ``total_*`` the panel's and the judges' together. A judge call
that failed without an answer is counted in ``judge_failed_calls``, never as a call of no tokens. Judge
dollars are unknown when any judge call has no prices; when the cohort's judge items were read from
``judgements.csv`` alone (its records, which hold the calls, are gone), every judge column is unknown (calls and
tokens too, never 0); a group no judge scored cost $0.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any, NamedTuple

from consilium.judges.cost import sum_costs
from consilium.models.usage import Usage, stage_order
from consilium.reports.consilium.data import ArmCost, CohortData, JudgeArmCost
from consilium.reports.consilium.judged import consilium_items, numbers, of_model, per_output
from consilium.reports.consilium.stats import POOLED, mean_sd, number
from consilium.runfolder.layout import JUDGEMENTS_CSV

__all__ = ["CostPoint", "JudgeSpend", "cost_by_case", "cost_by_stage", "cost_points", "cost_table", "judge_spend",
           "unknown_cost"]

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


class JudgeSpend(NamedTuple):
    """What judging a group of arms took: calls answered, calls failed without an answer, tokens, dollars
    (None: unknown); ``known`` False when none of it is known (the judgement records, which hold the calls,
    are gone: the judge items were read from judgements.csv)."""

    usage: Usage
    failed_calls: int
    cost: float | None
    known: bool = True


def _of(data: CohortData, arms: list[ArmCost]) -> list[JudgeArmCost]:
    """The judge calls on ``arms`` (a group's: the same arm key may come back in another replicate)."""
    keys = {(a.model, a.format, a.case_id) for a in arms}
    return [j for j in data.judge_costs if (j.model, j.format, j.case_id) in keys]


def judge_spend(data: CohortData, judges: list[JudgeArmCost]) -> JudgeSpend:
    """The sum over ``judges``; dollars unknown when any is. When the judge items came from ``judgements.csv``
    alone (the records that hold the calls are gone), nothing of it is known: never 0 calls, tokens or dollars."""
    if data.judgements_from == JUDGEMENTS_CSV:
        return JudgeSpend(Usage(), 0, None, known=False)
    return JudgeSpend(Usage.total(j.usage for j in judges), sum(j.failed_calls for j in judges),
                      sum_costs(j.cost for j in judges))


def _add(panel: float | None, judge: float | None) -> float | None:
    return None if panel is None or judge is None else panel + judge


def _judge_columns(spend: JudgeSpend, cases: int, panel_total: float | None) -> dict[str, Any]:
    """A group's judge and total columns beside its panel's: per case and over its ``cases``."""
    total = _add(panel_total, spend.cost)
    known = spend.known and cases > 0
    return {"judge_calls": spend.usage.calls if spend.known else None,
            "judge_failed_calls": spend.failed_calls if spend.known else None,
            "judge_input_tokens_per_case": number(spend.usage.input_tokens / cases) if known else None,
            "judge_output_tokens_per_case": number(spend.usage.output_tokens / cases) if known else None,
            "judge_cost_usd_per_case": _usd(spend.cost / cases) if spend.cost is not None and cases else None,
            "judge_cost_usd_total": _usd(spend.cost) if cases else None,
            "total_cost_usd_per_case": _usd(total / cases) if total is not None and cases else None,
            "total_cost_usd_total": _usd(total) if cases else None}


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
    #: the judges' mean cost per case (every rubric and judge), None when unknown: drawn at ``cost`` + it
    judge_cost: float | None = None


def cost_table(data: CohortData) -> list[dict[str, Any]]:
    """Per model and format (then pooled per format): completed ``cases``, ``priced`` (of them with a known
    cost), the mean cost per case and its population SD, the total over the cases, tokens per case (input,
    of them cached, output, of them reasoning) and the mean judge score (as Table 7)."""
    scores = [r for r in per_output(consilium_items(data)) if r.component == "conclusion"]
    table = []
    for model, fmt, arms in _groups(data):
        known = _known(a.cost for a in arms)
        usages = [a.usage for a in arms]
        judged = numbers(r for r in of_model(model, scores) if r.format == fmt)
        table.append({"model": model, "format": fmt, "cases": len(arms),
                      "priced": sum(a.cost is not None for a in arms),
                      "cost_usd_per_case": _usd(statistics.fmean(known)) if known else None,
                      "cost_usd_sd": _usd(statistics.pstdev(known)) if known else None,
                      "cost_usd_total": _usd(sum(known)) if known is not None and arms else None,
                      "input_tokens_per_case": _per_case(usages, "input_tokens"),
                      "cached_tokens_per_case": _per_case(usages, "cached_tokens"),
                      "output_tokens_per_case": _per_case(usages, "output_tokens"),
                      "reasoning_tokens_per_case": _per_case(usages, "reasoning_tokens"),
                      **_judge_columns(judge_spend(data, _of(data, arms)), len(arms),
                                       sum(known) if known is not None else None),
                      "mean_judge_score": mean_sd(judged)[0],
                      # any arm's tokens counted with tiktoken (not reported by the server): its dollars estimated
                      "estimated": any(a.usage.estimated for a in arms)
                      or any(j.usage.estimated for j in _of(data, arms))})
    return table


def cost_by_stage(data: CohortData) -> list[dict[str, Any]]:
    """Per model and format (then pooled per format) and stage in pipeline order: the cases, the mean
    cost per case of that stage (unknown when any case's calls of it lack prices) and its tokens per case;
    then stage ``judge`` once per rubric and judge model (each judge of a jury apart), with its failed calls."""
    table = []
    for model, fmt, arms in _groups(data):
        present = {s for a in arms for s in a.stages}
        for stage in stage_order(present):
            known = _known(a.stages.get(stage, 0.0) for a in arms)
            usages = [a.stage_usage.get(stage, Usage()) for a in arms]
            table.append({"model": model, "format": fmt, "stage": stage, "rubric": None, "judge_model": None,
                          "cases": len(arms),
                          "cost_usd_per_case": _usd(sum(known) / len(arms)) if known is not None else None,
                          "input_tokens_per_case": _per_case(usages, "input_tokens"),
                          "output_tokens_per_case": _per_case(usages, "output_tokens"),
                          "calls": sum(u.calls for u in usages), "failed_calls": None,
                          "estimated": any(u.estimated for u in usages)})
        judges = _of(data, arms)
        for rubric, judge in dict.fromkeys((j.rubric, j.judge_model) for j in judges):
            spend = judge_spend(data, [j for j in judges if (j.rubric, j.judge_model) == (rubric, judge)])
            table.append({"model": model, "format": fmt, "stage": "judge", "rubric": rubric, "judge_model": judge,
                          "cases": len(arms),
                          "cost_usd_per_case": _usd(spend.cost / len(arms)) if spend.cost is not None else None,
                          "input_tokens_per_case": number(spend.usage.input_tokens / len(arms)),
                          "output_tokens_per_case": number(spend.usage.output_tokens / len(arms)),
                          "calls": spend.usage.calls, "failed_calls": spend.failed_calls,
                          "estimated": spend.usage.estimated})
    return table


def _case_row(data: CohortData, model: str, fmt: str, case: str, arms: list[ArmCost]) -> dict[str, Any]:
    panel = Usage.total(a.usage for a in arms)
    panel_cost = sum_costs(a.cost for a in arms)
    spend = judge_spend(data, _of(data, arms))
    return {"model": model, "format": fmt, "case_id": case, "arms": len(arms),
            "panel_calls": panel.calls, "panel_input_tokens": panel.input_tokens,
            "panel_output_tokens": panel.output_tokens, "panel_cost_usd": _usd(panel_cost),
            **{k: v if spend.known else None for k, v in (
                ("judge_calls", spend.usage.calls), ("judge_failed_calls", spend.failed_calls),
                ("judge_input_tokens", spend.usage.input_tokens), ("judge_output_tokens", spend.usage.output_tokens))},
            "judge_cost_usd": _usd(spend.cost), "total_cost_usd": _usd(_add(panel_cost, spend.cost)),
            "estimated": panel.estimated or spend.usage.estimated}


def cost_by_case(data: CohortData) -> list[dict[str, Any]]:
    """Per model, format and case (a cohort run in replicates: its replicate arms together), then pooled over
    the models per format and case: the completed ``arms``, the panel's calls, tokens and dollars, the judges'
    (every rubric and judge) with their failed calls, and the two summed."""
    keys = list(dict.fromkeys((a.model, a.format, a.case_id) for a in data.costs))
    table = [_case_row(data, m, f, c, [a for a in data.costs if (a.model, a.format, a.case_id) == (m, f, c)])
             for m, f, c in sorted(keys)]
    for fmt, case in sorted({(f, c) for _, f, c in keys}):
        table.append(_case_row(data, POOLED, fmt, case,
                               [a for a in data.costs if (a.format, a.case_id) == (fmt, case)]))
    return table


def cost_points(data: CohortData) -> list[CostPoint]:
    """The figure's points: each model × format whose cases all have a known cost and that has a numeric
    C1–C8 conclusion score (a point needs both axes)."""
    scores = [r for r in per_output(consilium_items(data)) if r.component == "conclusion"]
    points = []
    for model, fmt, arms in _groups(data):
        known = _known(a.cost for a in arms)
        judged = numbers(r for r in of_model(model, scores) if r.format == fmt)
        if model == POOLED or not known or not judged:
            continue
        judging = judge_spend(data, _of(data, arms)).cost
        points.append(CostPoint(model, fmt, len(arms), statistics.fmean(known), statistics.pstdev(known),
                                statistics.fmean(judged), statistics.pstdev(judged), len(judged),
                                any(a.usage.estimated for a in arms),
                                None if judging is None else judging / len(arms)))
    return points


def unknown_cost(data: CohortData) -> list[str]:
    """``"model, format"`` of each model × format with a completed arm whose cost is unknown (no point)."""
    return [f"{model}, {fmt}" for model, fmt, arms in _groups(data)
            if model != POOLED and _known(a.cost for a in arms) is None]
