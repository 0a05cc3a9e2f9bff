"""A cohort's judged responses: one per (trace, rubric), with every judge item of it.

The judgement records (``*.judge.<rubric>.json``) carry what the paper tables need beyond the score
(the clinical-equivalence flags, a signed criterion's kind and weight, a ranked candidate's rank, the
judge's k); when only ``judgements.csv`` is left, the items are rebuilt from its rows without them,
and the tables that need them count those responses as not evaluable.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consilium.judges.record import JudgementItem, read_judgement
from consilium.reports.compare import CohortData
from consilium.reports.consilium.data import replicate_key
from consilium.runfolder.rows import JudgementRow

__all__ = ["Response", "by_component", "group", "judged_responses"]


@dataclass(frozen=True)
class Response:
    """What one rubric made of one completed arm (one replicate of a case, in a cohort run in replicates)."""

    model: str
    variant: str  # the arm's format: a consilium format or board-<mode>
    case_id: str
    rubric: str
    items: tuple[JudgementItem, ...]
    aggregates: dict[str, dict[str, Any]] = field(default_factory=dict)
    replicate: str = ""  # the arm's replicate index ("" when the cohort has none)


def _item(row: JudgementRow) -> JudgementItem:
    return JudgementItem(component=row.component, criterion=row.criterion, score=row.score,
                         not_evaluable=row.not_evaluable, reason=row.reason or None)


def judged_responses(run_dir: Path, data: CohortData) -> list[Response]:
    """Every judged response of the cohort's completed arms, in a stable order."""
    rows: dict[tuple[str, str, str, str, str, str], list[JudgementRow]] = defaultdict(list)
    for row in data.judgements:
        rows[(row.model, row.format, row.case_id, row.rubric, replicate_key(row), row.judgement)].append(row)
    responses = []
    for (model, variant, case_id, rubric, replicate, record), group_rows in sorted(rows.items()):
        if data.judgements_from == "records" and record:
            judgement = read_judgement(run_dir / record)
            responses.append(Response(model, variant, case_id, rubric, tuple(judgement.items),
                                      judgement.aggregates, replicate))
        else:
            responses.append(Response(model, variant, case_id, rubric, tuple(_item(r) for r in group_rows),
                                      replicate=replicate))
    return responses


def by_component(response: Response) -> dict[str, list[JudgementItem]]:
    components: dict[str, list[JudgementItem]] = defaultdict(list)
    for item in response.items:
        components[item.component].append(item)
    return dict(components)


def group(responses: list[Response], rubric: str) -> dict[tuple[str, str], list[Response]]:
    """The rubric's responses by (model, variant), in sorted order."""
    groups: dict[tuple[str, str], list[Response]] = defaultdict(list)
    for response in responses:
        if response.rubric == rubric:
            groups[(response.model, response.variant)].append(response)
    return dict(sorted(groups.items()))
