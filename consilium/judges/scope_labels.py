"""A board case's frozen decision scope: which of the four management decisions its reference conclusion takes,
fixed before any candidate is read, so no candidate can add a decision to its own denominator or take one out
(AnqiLi24/OpenTumorBoard ``training/verl_otb/precompute_reference_scope.py``; opentumorboard.txt App. E.2 L194).

The authors label each decision ``positive`` (the reference decides to act), ``negative`` (it decides against)
or ``absent`` (it decides nothing) with a candidate-blind judge call (frozen_scope.py). A case may label its
decisions by hand instead (``reference.decisions``, null = absent): a decision it states reads ``present``, as a
hand label does not say which way it goes. Only ``absent`` changes the scoring: that decision is locked to −1.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from consilium.cases import Case

__all__ = ["DIMENSIONS", "LABELS", "FrozenScope", "case_scope", "reference_sha256"]

#: The four decisions, in the official schemas' order.
DIMENSIONS: tuple[str, ...] = ("therapy", "surgery", "next_action", "clinical_trial")
#: What the scope call answers for each decision.
LABELS: tuple[str, ...] = ("positive", "negative", "absent")

Label = Literal["positive", "negative", "absent", "present"]


def reference_sha256(reference: str) -> str:
    """The full sha256 of the reference conclusion, as the official scope cache keys it."""
    return hashlib.sha256(reference.encode("utf-8")).hexdigest()


class FrozenScope(BaseModel):
    """The scope a judgement was made under, as recorded in it (``Judgement.frozen_scope``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: dict[str, Label] = Field(description="each decision's label, in the official order")
    source: Literal["case", "judge", "cache"] = Field(
        description="case: the case's reference.decisions (hand-labelled); judge: a candidate-blind judge call made "
                    "for this judgement; cache: such a call's answer read from the scope cache")
    reference_sha256: str = Field(description="sha256 of the reference conclusion the labels were made from")
    rationale: str | None = Field(default=None, description="the scope judge's rationale (judge, cache)")
    judge_model: str | None = Field(default=None, description="the model that labelled it (judge, cache)")
    cache_file: str | None = Field(default=None, description="the scope cache file it was written to or read from")

    @property
    def locked(self) -> frozenset[str]:
        """The decisions locked to −1: those the reference leaves absent."""
        return frozenset(name for name, label in self.labels.items() if label == "absent")


def case_scope(case: Case, reference: str) -> FrozenScope | None:
    """The case's own labelling (``reference.decisions``), None when it has none."""
    decisions = case.reference.decisions if case.reference else None
    if decisions is None:
        return None
    given = decisions.model_dump()
    return FrozenScope(labels={name: "absent" if given[name] is None else "present" for name in DIMENSIONS},
                       source="case", reference_sha256=reference_sha256(reference))
