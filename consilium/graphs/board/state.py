"""Typed state of the board graph; every list field has an explicit reducer (STYLE.md 5)."""

from __future__ import annotations

import operator
from typing import Annotated, Literal

from typing_extensions import TypedDict

from consilium.agents.records import AssignedRole
from consilium.graphs.board.transcript import Turn
from consilium.graphs.reducers import replace

__all__ = ["BoardState", "Floor", "SingleState", "TurnState"]


class Floor(TypedDict):
    """The specialist the moderator gave the floor to, the question (for a pass, the point to take up),
    the specialist turn they reply to, if named, and whether the floor was passed without a moderator turn."""

    role: AssignedRole
    question: str
    responds_to: int | None
    passed: bool


class BoardState(TypedDict, total=False):
    roles: Annotated[list[AssignedRole], replace]
    turns: Annotated[list[Turn], operator.add]
    floor: Floor | None
    stop_reason: Literal["moderator_closed", "turn_limit"] | None
    conclusion: str | None


class SingleState(TypedDict, total=False):
    """Single mode: the whole meeting in one call, and whether it kept the format after its repairs."""

    transcript: str
    valid: bool


class TurnState(TypedDict, total=False):
    """The Specialist Turn: one answer, and why it broke consilium's answer schema when it was kept anyway."""

    answer: str
    schema_failure: str | None
