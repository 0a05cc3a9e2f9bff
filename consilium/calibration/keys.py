"""What a physician rating and a judgement item are keyed by: one rule for every rubric.

A rating rates one judgement item, and names it as the judge writes it: the item's ``component`` and
``criterion`` (the key ``judge --calibration`` applies an isotonic map by, too). On most rubrics an
item's criterion is a criterion id of the rubric, on a component that criterion lists. Two scoring
kinds write other criteria on their items, and a rating names those:

* ``diagnosis_match`` (Neural-MedBench) judges candidate diagnoses, not the rubric's one criterion:
  the ``conclusion`` has one item, ``final_conclusion`` (its diagnosis, pass@1), and the
  ``differential`` one per ranked candidate, ``rank_1`` (the leading diagnosis), ``rank_2``, …
  (neural-medbench.txt L249, L403; consilium/judges/tasks.py, ``_diagnosis``);
* ``signed_criteria`` (NPCBench) takes its criteria from each case (``reference.rubric``), so any id
  is one of some case's, on the components it judges.

:func:`rated_key_error` says why a (component, criterion) is no item of a rubric; the ratings loader
refuses such a rating in one line, rather than letting it pair with nothing.
"""

from __future__ import annotations

import re

from consilium.judges.record import JudgementItem
from consilium.judges.rubric import Rubric

__all__ = ["FINAL_CONCLUSION", "item_key", "rated_key_error"]

#: The criterion of a diagnosis-match rubric's conclusion item (consilium/judges/tasks.py writes it).
FINAL_CONCLUSION = "final_conclusion"
_RANK = re.compile(r"rank_[1-9][0-9]*")


def item_key(item: JudgementItem) -> tuple[str, str]:
    """The (component, criterion) a judgement item is rated by."""
    return item.component, item.criterion


def _item_criteria(rubric: Rubric, component: str) -> tuple[str, ...]:
    """The criteria a rubric's items of ``component`` carry, as a rating must name them."""
    if rubric.kind.name == "diagnosis_match":
        return (FINAL_CONCLUSION,) if component == "conclusion" else ("rank_1", "rank_2", "…")
    return tuple(c.id for c in rubric.criteria_for(component))


def rated_key_error(rubric: Rubric, component: str, criterion: str) -> str | None:
    """Why (``component``, ``criterion``) names no judgement item of ``rubric`` ("field: reason"), or None."""
    scored = rubric.components
    if component not in scored:
        return f"component: {rubric.name} judges no {component!r} (its components: {', '.join(scored)})"
    if rubric.kind.criteria_from_case:
        return None
    if rubric.kind.name == "diagnosis_match" and component == "differential":
        valid = _RANK.fullmatch(criterion) is not None
    else:
        valid = criterion in _item_criteria(rubric, component)
    if valid:
        return None
    return (f"criterion: {criterion!r} is not a criterion of {rubric.name}'s {component} items "
            f"({', '.join(_item_criteria(rubric, component))})")
