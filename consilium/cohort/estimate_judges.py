"""What a rubric asks of one trace, before the trace exists: its items, and so its judge calls.

A rubric's scoring kind (consilium/judges/tasks.py) makes one call per criterion of each component it
scores (``mean``, ``single``), one call per component read by every dimension (``weighted_decisions``),
one per criterion of the case's own rubric (``signed_criteria``) or one per candidate diagnosis
(``diagnosis_match``: the conclusion's one, the differential's 1 to ``k``). Which components a trace
offers follows from its protocol's declaration (``Protocol.judged``, by variant). The whole-case criteria are
sent only for a protocol whose traces carry a deliberation record (``Protocol.judged_record``: the consilium's);
a case without the reference a rubric needs gets no call. In the constrained decoding order each item is one
call when its first answer is valid; with every repair an item takes ``1 + max_repairs`` calls, in the paper
order ``2 + max_repairs`` (consilium/judges/decoding.py): the upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from consilium.cases import Case
from consilium.graphs.registry import get_protocol
from consilium.judges.prompting import judge_messages
from consilium.judges.rubric import Rubric
from consilium.judges.runner import reference_for
from consilium.models.tokens import count_message_tokens

__all__ = ["JudgeBounds", "judge_bounds"]


@dataclass(frozen=True)
class JudgeBounds:
    """One rubric on one trace, for one judge: the calls (fewest items, most items, most with every repair),
    the prompt's tokens besides the judged text (rubric, case, reference), and the items judged on the whole
    record (their prompt carries it besides the answer)."""

    calls: tuple[int, int, int]
    prompt_tokens: int
    whole_case_items: int


def _items(rubric: Rubric, case: Case, record: bool, component: str, k: int) -> tuple[int, int, int]:
    """(fewest items, most items, of them judged on the whole record) of one component."""
    kind = rubric.kind.name
    if kind == "weighted_decisions":
        return 1, 1, 0  # one call, read by every dimension
    if kind == "signed_criteria":
        n = len(case.reference.rubric) if case.reference and case.reference.rubric else 0
        return n, n, 0
    if kind == "diagnosis_match":
        return (1, k, 0) if component == "differential" else (1, 1, 0)
    criteria = rubric.criteria_for(component)
    whole = sum(c.whole_case for c in criteria) if record else 0
    sent = sum(not c.whole_case for c in criteria) + whole
    return sent, sent, whole


def judge_bounds(rubric: Rubric, case: Case, size: int, protocol: str, variant: str, *, k: int, max_repairs: int,
                 paper: bool, fixed: dict[str, int]) -> JudgeBounds | None:
    """The calls ``rubric`` makes on a completed trace of ``case`` (of ``size`` tokens) in (``protocol``,
    ``variant``); None for a variant whose components its protocol does not declare (its estimate needs
    ``--like``). ``fixed`` keeps the rubric's prompt tokens around a case by reference text, counted once."""
    declared = get_protocol(protocol)
    offered = declared.judged.get(variant)
    if offered is None:
        return None
    reference = reference_for(rubric, case)
    if reference is None and rubric.kind.needs_reference:
        return JudgeBounds((0, 0, 0), 0, 0)  # not evaluable, unsent
    low = high = whole = 0
    for component in (c for c in rubric.components if c in offered):
        fewest, most, on_record = _items(rubric, case, declared.judged_record, component, k)
        low, high, whole = low + fewest, high + most, whole + on_record
    per_item = (2 if paper else 1) + max_repairs
    if (reference or "") not in fixed:
        fixed[reference or ""] = count_message_tokens(list(judge_messages(rubric, "", reference or "", "", "")))
    return JudgeBounds((low, high, high * per_item), fixed[reference or ""] + size, whole)
