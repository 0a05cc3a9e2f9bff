"""The AI Consilium judge's items as the score tables select them (ai-consilium.txt, Tables 6–20).

A *per-output* criterion is one of criteria 1–8; the whole-case criteria (panel adequacy, complexity,
overall quality: ``whole_case`` in consilium/judges/rubrics/ai-consilium.yaml) are reported in their
own rows and never enter a C1–C8 mean. An item is one typed row of judgements.csv
(:class:`~consilium.runfolder.rows.JudgementRow`); a not-evaluable item's ``score`` is None.
"""

from __future__ import annotations

from collections.abc import Iterable

from consilium.agents.records import FORMATS
from consilium.graphs.arms import arm_format
from consilium.graphs.consilium.protocol import CONSILIUM
from consilium.judges.rubric import COMPONENTS
from consilium.reports.consilium.data import CONSILIUM_RUBRIC, CohortData
from consilium.reports.consilium.files import rubric_criteria
from consilium.reports.consilium.outcomes import models_of
from consilium.reports.consilium.stats import POOLED
from consilium.runfolder.rows import JudgementRow

__all__ = [
    "COMPONENT_FORMATS",
    "Row",
    "component_formats",
    "consilium_items",
    "criterion_order",
    "is_whole_case",
    "models_and_pool",
    "numbers",
    "of_model",
    "per_output",
    "score_of",
]

#: The columns of Tables 6, 8, 10–20: the role components exist in the structured format only.
COMPONENT_FORMATS = (("role_reasoning", "structured"), ("role_opinion", "structured"),
                     ("conclusion", "free-form"), ("conclusion", "structured"))

Row = JudgementRow


def component_formats(data: CohortData) -> list[tuple[str, str]]:
    """The (component, format) columns of Tables 6, 10–12 for the cohort's protocol: the consilium's are
    :data:`COMPONENT_FORMATS`; another protocol's (the single baseline's answer, scored as a conclusion)
    are the components the AI Consilium judge scored in each of its formats."""
    if data.protocol == CONSILIUM.name:
        return list(COMPONENT_FORMATS)
    scored = {(r.component, r.format) for r in consilium_items(data)}
    formats = [f for v in FORMATS if (f := arm_format(data.protocol, v)) is not None]
    formats += sorted({f for _, f in scored} - set(formats))
    return [(c, f) for c in COMPONENTS for f in formats if (c, f) in scored]


def score_of(row: Row) -> float | None:
    """An item's numeric score; ``None`` when it was not evaluable."""
    return row.score


def is_whole_case(row: Row) -> bool:
    """Whether the item scores a whole-case criterion (never part of a C1–C8 mean)."""
    return bool(row.whole_case)


def consilium_items(data: CohortData) -> list[Row]:
    """The items of the AI Consilium judge on its own criteria."""
    criteria = rubric_criteria(CONSILIUM_RUBRIC)
    return [r for r in data.judgements if r.rubric == CONSILIUM_RUBRIC and r.criterion in criteria]


def per_output(rows: Iterable[Row]) -> list[Row]:
    """The items of the per-output criteria (C1–C8)."""
    return [r for r in rows if not is_whole_case(r)]


def of_model(model: str, rows: Iterable[Row]) -> list[Row]:
    """The items of one panel model, or all of them for :data:`POOLED`."""
    return [r for r in rows if model in (POOLED, r.model)]


def numbers(rows: Iterable[Row]) -> list[float]:
    """The numeric scores of some items (the not-evaluable ones left out)."""
    return [s for s in (score_of(r) for r in rows) if s is not None]


def criterion_order(rubric: str, criteria: Iterable[str]) -> list[str]:
    """Criteria in the rubric's order, any the rubric does not name last."""
    known = list(rubric_criteria(rubric))
    return sorted(set(criteria), key=lambda c: (known.index(c) if c in known else len(known), c))


def models_and_pool(data: CohortData) -> list[str]:
    """The cohort's panel models, then :data:`POOLED`: the rows of every per-model table."""
    return [*models_of(data), POOLED]
