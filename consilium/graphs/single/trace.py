"""The run record of a single-specialist baseline run (docs/traces.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from consilium.agents.records import AssignedRole, Format, Report
from consilium.graphs.single.config import SingleRecord
from consilium.traces.schema import TraceBase

__all__ = ["SingleTrace"]


class SingleTrace(TraceBase):
    """One case answered by its primary specialist alone, in one format."""

    kind: Literal["single"] = "single"
    config: SingleRecord = Field(description="the run's settings plus prompt file hashes")
    format: Format
    moderator_model: str = Field(description="the model that assigned the roles")
    roles: list[AssignedRole] = Field(description="the panel the moderator assigned; only the primary answers")
    role_assignment_shared: bool = Field(
        default=False, description="true when the roles were assigned in the other format's run of this case")
    specialist: str | None = Field(description="the id of the role that answered (the primary)")
    answer: Report | None = Field(description="the answer, in the shape of a consilium report (version 1)")
