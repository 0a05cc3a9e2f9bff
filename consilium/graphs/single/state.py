"""Typed state of the single-specialist graph (STYLE.md 5)."""

from __future__ import annotations

from typing import Annotated

from typing_extensions import TypedDict

from consilium.agents.records import AssignedRole, Report
from consilium.graphs.reducers import replace

__all__ = ["SingleState"]


class SingleState(TypedDict, total=False):
    roles: Annotated[list[AssignedRole], replace]
    answer: Report
