"""Typed state of the board graph; every list field has an explicit reducer (STYLE.md 5)."""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from consilium.agents.records import AssignedRole
from consilium.board.transcript import Turn
from consilium.graphs.consilium.state import replace

__all__ = ["BoardState", "Floor"]


class Floor(TypedDict):
    """The specialist the moderator gave the floor to, and the question."""

    role: AssignedRole
    question: str


class BoardState(TypedDict, total=False):
    roles: Annotated[list[AssignedRole], replace]
    turns: Annotated[list[Turn], operator.add]
    floor: Floor | None
    stop_reason: Literal["moderator_closed", "turn_limit"] | None
    conclusion: str | None
