"""The run record of a consilium: a versioned, documented file format (docs/traces.md).

A trace is plain JSON (``json.load`` reads it; ``pandas.json_normalize`` flattens
its ``calls`` or ``rounds``). ``schema_version`` changes whenever a field's
meaning changes; readers refuse versions they do not know.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from consilium.agents.records import AssignedRole, Format, Opinion, Report, Round, StopReason
from consilium.models import CallRecord, Usage, UsageLedger

__all__ = ["SCHEMA_VERSION", "Trace", "UsageSummary"]

SCHEMA_VERSION = "1.0"


class UsageSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by_stage: dict[str, Usage]
    by_role: dict[str, Usage]
    by_round: dict[str, Usage]
    total: Usage

    @classmethod
    def from_ledger(cls, ledger: UsageLedger) -> UsageSummary:
        return cls(by_stage=ledger.by_stage(), by_role=ledger.by_role(), by_round=ledger.by_round(),
                   total=ledger.total)


class Trace(BaseModel):
    """One consilium run of one case in one format."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1.0"] = "1.0"
    kind: Literal["consilium"] = "consilium"
    run_id: str
    case_id: str
    case_hash: str
    case: dict[str, Any] = Field(description="the case as run, so the trace replays on its own")
    format: Format
    model: str = Field(description="the panel model's id")
    moderator_model: str
    config: dict[str, Any] = Field(description="ConsiliumConfig plus prompt file hashes")
    status: Literal["completed", "failed"]
    error: str | None = None
    roles: list[AssignedRole]
    role_assignment_shared: bool = Field(
        default=False, description="true when the roles were assigned in the other format's run of this case")
    opinions: list[Opinion]
    reports: list[Report] = Field(description="every report version, initial first")
    rounds: list[Round]
    stop_reason: StopReason | None
    final_report: Report | None
    usage: UsageSummary
    calls: list[CallRecord]
    started_at: str
    wall_s: float
    versions: dict[str, str]
