"""The run record of one consilium run (docs/traces.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from consilium.agents.records import AssignedRole, Format, Opinion, Report, Round, StopReason
from consilium.graphs.consilium.config import ConsiliumRecord
from consilium.graphs.consilium.seat import HumanRecord
from consilium.traces.schema import TraceBase

__all__ = ["Trace"]


class Trace(TraceBase):
    """One consilium run of one case in one format."""

    kind: Literal["consilium"] = "consilium"
    config: ConsiliumRecord = Field(description="the run's settings plus prompt file hashes")
    format: Format
    moderator_model: str
    roles: list[AssignedRole]
    role_assignment_shared: bool = Field(
        default=False, description="true when the roles were assigned in the other format's run of this case")
    opinions: list[Opinion]
    reports: list[Report] = Field(description="every report version, initial first")
    rounds: list[Round]
    stop_reason: StopReason | None
    final_report: Report | None
    # Written only when a person sat at the table, so every other trace is as it always was.
    human: HumanRecord | None = Field(default=None, exclude_if=lambda v: v is None,
                                      description="the person at the table (simulate --human) and their answers; "
                                                  "absent when every member was a model (docs/human.md)")
