"""Coverage of the AI Consilium judge (ai-consilium.txt, Tables 10–12): per model and pooled, the
opportunities (arms times applicable criteria) and how many of them got a numeric score, were not
evaluable, or are missing (a failed arm, an arm not judged).
"""

from __future__ import annotations

from typing import Any

from consilium.reports.consilium.data import CONSILIUM_RUBRIC, CohortData
from consilium.reports.consilium.files import rubric_criteria
from consilium.reports.consilium.judged import (
    Row,
    component_formats,
    consilium_items,
    models_and_pool,
    of_model,
    per_output,
)
from consilium.reports.consilium.stats import POOLED, percent

__all__ = ["table10", "table11", "table12"]


def _applicable(component: str, *, whole_case: bool) -> list[str]:
    return [c.id for c in rubric_criteria(CONSILIUM_RUBRIC).values()
            if component in c.components and c.whole_case == whole_case]


def _arm_counts(data: CohortData, model: str, fmt: str) -> int:
    return sum(1 for a in data.arms if a.format == fmt and model in (POOLED, a.model))


def table10(data: CohortData) -> list[dict[str, Any]]:
    """Table 10: per model and pooled, the C1–C8 criteria applicable to each component and format, and
    the opportunities: every arm of that model and format in arms.csv (failed ones included) times
    the applicable criteria."""
    if not consilium_items(data):
        return []
    table = []
    for model in models_and_pool(data):
        for component, fmt in component_formats(data):
            criteria, arms = _applicable(component, whole_case=False), _arm_counts(data, model, fmt)
            if arms:
                table.append({"model": model, "component": component, "format": fmt,
                              "applicable_criteria": " ".join(criteria), "criteria": len(criteria), "arms": arms,
                              "opportunities": arms * len(criteria)})
    return table


def _coverage(rows: list[Row], opportunities: int) -> dict[str, Any]:
    judged = sum(1 for r in rows if r.score is not None)
    not_evaluable = sum(1 for r in rows if r.score is None)
    return {"judged": judged, "opportunities": opportunities, "judged_pct": percent(judged, opportunities),
            "not_evaluable": not_evaluable, "missing": opportunities - judged - not_evaluable}


def table11(data: CohortData) -> list[dict[str, Any]]:
    """Table 11: per model and pooled, each component's numeric C1–C8 scores out of its opportunities
    (Table 10); the rest is ``not_evaluable`` or ``missing`` (a failed arm, an arm not judged)."""
    rows = per_output(consilium_items(data))
    table = []
    for opp in table10(data):
        group = [r for r in of_model(opp["model"], rows) if (r.component, r.format) == (opp["component"],
                                                                                       opp["format"])]
        table.append({"model": opp["model"], "component": opp["component"], "format": opp["format"],
                      **_coverage(group, opp["opportunities"])})
    return table


def table12(data: CohortData) -> list[dict[str, Any]]:
    """Table 12 (``model`` pooled) and its per-model rows: each criterion's numeric scores out of its
    opportunities (the arms of that model and format), per component and format; the whole-case
    criteria in their own rows."""
    rows = consilium_items(data)
    if not rows:
        return []
    criteria = rubric_criteria(CONSILIUM_RUBRIC)
    table = []
    for model in models_and_pool(data):
        mine = of_model(model, rows)
        for criterion in criteria.values():
            for component, fmt in component_formats(data):
                arms = _arm_counts(data, model, fmt)
                if component not in criterion.components or not arms:
                    continue
                group = [r for r in mine if (r.criterion, r.component, r.format) == (criterion.id, component, fmt)]
                table.append({"model": model, "criterion": criterion.id, "criterion_name": criterion.name,
                              "whole_case": criterion.whole_case, "component": component, "format": fmt,
                              **_coverage(group, arms)})
    return table
