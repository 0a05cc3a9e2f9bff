"""What a judgement cost: its judge calls' tokens and dollars, per judge (each judge of a jury apart).

A judgement record keeps every call its judge made (each repair and schema-constrained attempt included,
the calls of not-evaluable items too) with the prices the judge model had (consilium/models/pricing.py).
Its cost is worked out as a trace's is, grouped by the judge that made the calls: one group for a single
judge, one per member for a jury. A call that failed without an answer (a backend error) is recorded as a
count in the item, or the judge's vote, it was asked for (``failed_calls``; a call several items read, on the
first of them), never read from the reason's words (but in a record older than the count). It has no usage to
record: it is counted in ``failed_calls``, never as a call of zero tokens, and adds no tokens and no dollars
(a server reports no usage for a request it did not answer). A judge's dollars are unknown (None) when any of
its answered calls has no prices; a judge with no answered call cost $0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from consilium.judges.record import Judgement, JudgementItem, JuryVote
from consilium.models import CallRecord, Usage
from consilium.models.pricing import call_cost

__all__ = ["FAILED_CALL", "JudgeCost", "item_spend", "judge_costs", "sum_costs"]

#: The reason an item is not evaluable when its judge call raised (consilium/judges/asking.py): read only in a
#: record made before items counted their failed calls.
FAILED_CALL = "judge call failed"


class JudgeCost(NamedTuple):
    """One judge's calls for one judgement: tokens as generated, dollars (None: unknown), failed calls."""

    rubric: str
    judge_model: str
    usage: Usage
    cost: float | None
    failed_calls: int


def _failed(decision: JudgementItem | JuryVote) -> int:
    """The calls for ``decision`` (an item, or a judge's vote) that failed without an answer, as recorded; a
    record older than the count says so in its reason alone."""
    if decision.failed_calls is not None:
        return decision.failed_calls
    return int(bool(decision.reason) and str(decision.reason).startswith(FAILED_CALL))


def _dollars(calls: Sequence[CallRecord]) -> float | None:
    if any(call.prices is None for call in calls):
        return None
    return sum((call_cost(call.usage, call.prices) for call in calls if call.prices is not None), 0.0)


def sum_costs(costs: Iterable[float | None]) -> float | None:
    """The sum of dollars, None (unknown) when any is."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total


def judge_costs(judgement: Judgement) -> list[JudgeCost]:
    """Per judge of ``judgement`` (a jury's in its order, then any other model its calls name): its calls'
    usage, dollars and failed calls."""
    calls: dict[str, list[CallRecord]] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    if judgement.jury is None:
        judges = [judgement.judge_model]
        calls[judgement.judge_model] = list(judgement.calls)
        failed[judgement.judge_model] = sum(_failed(item) for item in judgement.items)
    else:
        judges = [member.model for member in judgement.jury]
        for call in judgement.calls:
            calls[call.model].append(call)
        for item in judgement.items:
            for vote in item.votes or []:
                failed[vote.model] += _failed(vote)
        judges += [model for model in calls if model not in judges]
    return [JudgeCost(judgement.rubric, judge, Usage.total(c.usage for c in calls[judge]),
                      _dollars(calls[judge]), failed[judge]) for judge in dict.fromkeys(judges)]


def _item_failed(item: JudgementItem) -> int:
    if item.votes is not None:
        return sum(_failed(vote) for vote in item.votes)
    return _failed(item)


def item_spend(judgement: Judgement) -> list[dict[str, Any]]:
    """judgements.csv's cost columns, one dict per item in the record's order: the calls tagged with the item's
    ``component:criterion`` (every judge of a jury, each repair included); a call that answers several items
    (the four-decision rubric's one call per conclusion) is on the first item of its component, any other on
    the first item, so the rows of a judgement sum to its calls. ``judge_cost_usd`` is None (unknown) when a
    call of the item has no prices; ``judge_failed_calls`` counts its calls that failed without an answer."""
    items = judgement.items
    index = {(item.component, item.criterion): i for i, item in reversed(list(enumerate(items)))}
    first = {item.component: i for i, item in reversed(list(enumerate(items)))}
    calls: dict[int, list[CallRecord]] = defaultdict(list)
    for call in judgement.calls:
        component, _, criterion = (call.role or "").partition(":")
        calls[index.get((component, criterion), first.get(component, 0))].append(call)
    rows = []
    for i, item in enumerate(items):
        mine, failed = calls[i], _item_failed(item)
        usage = Usage.total(c.usage for c in mine)
        rows.append({"judge_calls": usage.calls, "judge_failed_calls": failed, "judge_input_tokens": usage.input_tokens,
                     "judge_output_tokens": usage.output_tokens, "judge_cost_usd": _usd(_dollars(mine))})
    return rows


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, 8)
