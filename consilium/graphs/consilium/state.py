"""Typed state of the consilium graph; every list field has an explicit reducer (STYLE.md 5)."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from consilium.agents.records import AssignedRole, Opinion, Report, Round, StopReason, Vote

__all__ = ["ConsiliumState", "OpinionTask", "VoteTask", "replace"]


def replace(_old: list[AssignedRole] | None, new: list[AssignedRole]) -> list[AssignedRole]:
    """The panel is set once; a later write replaces it rather than appending."""
    return new


class ConsiliumState(TypedDict, total=False):
    roles: Annotated[list[AssignedRole], replace]
    opinions: Annotated[list[Opinion], operator.add]
    reports: Annotated[list[Report], operator.add]
    votes: Annotated[list[Vote], operator.add]
    rounds: Annotated[list[Round], operator.add]
    round: int
    stop_reason: StopReason | None


class OpinionTask(TypedDict):
    role: AssignedRole


class VoteTask(TypedDict):
    role: AssignedRole
    report: Report
    round: int
