"""Typed state of the consilium graph; every list field has an explicit reducer (STYLE.md 5)."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

from typing_extensions import TypedDict

from consilium.agents.records import AssignedRole, Opinion, Report, Round, StopReason, Vote
from consilium.graphs.consilium.seat import HumanInput
from consilium.graphs.reducers import replace

__all__ = ["ConsiliumState", "OpinionTask", "VoteTask"]


class ConsiliumState(TypedDict, total=False):
    roles: Annotated[list[AssignedRole], replace]
    opinions: Annotated[list[Opinion], operator.add]
    reports: Annotated[list[Report], operator.add]
    votes: Annotated[list[Vote], operator.add]
    rounds: Annotated[list[Round], operator.add]
    round: int
    stop_reason: StopReason | None
    #: A person's seat (simulate --human): the role id they play, and every answer they gave.
    human: str
    human_inputs: Annotated[list[HumanInput], operator.add]


class OpinionTask(TypedDict):
    role: AssignedRole
    human: NotRequired[bool]


class VoteTask(TypedDict):
    role: AssignedRole
    report: Report
    round: int
    human: NotRequired[bool]
