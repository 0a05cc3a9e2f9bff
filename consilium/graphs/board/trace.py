"""The run records of a tumor board and of a Specialist Turn (docs/traces.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from consilium.agents.records import AssignedRole
from consilium.graphs.board.config import BoardRecord, TurnRecord
from consilium.graphs.board.transcript import Turn
from consilium.graphs.board.validate import FormatReport
from consilium.traces.schema import TraceBase

__all__ = ["BoardTrace", "TurnTrace"]


class BoardTrace(TraceBase):
    """One tumor-board run (opentumorboard.txt, §2.4, App. B.2)."""

    kind: Literal["board"] = "board"
    config: BoardRecord = Field(description="the run's settings, prompt file hashes, mode, moderator model and "
                                            "slide images")
    mode: Literal["agents", "single"]
    roles: list[AssignedRole] = Field(description="the specialists at the table (agents mode)")
    turns: list[Turn]
    transcript: str = Field(description="<discussion>…</discussion><conclusion>…</conclusion>")
    conclusion: str | None
    stop_reason: Literal["moderator_closed", "turn_limit", "single_call"] | None
    validation: FormatReport | None = Field(description="App. E.2 format checks of the transcript")
    images_sent: bool = Field(description="whether slide images went to the model as image parts")
    moderator_images_sent: bool | None = Field(
        default=None, description="whether they went to the moderator's model (agents mode); null: as images_sent "
                                  "(traces older than 1.3, single mode)")
    notes: list[str] = Field(default_factory=list)


class TurnTrace(TraceBase):
    """One Specialist Turn answer (opentumorboard.txt, App. B.1)."""

    kind: Literal["turn"] = "turn"
    config: TurnRecord = Field(description="the run's settings, prompt file hashes and slide images")
    role: str
    role_category: str
    question: str
    answer: str | None
    images_sent: bool
    answer_schema_failure: str | None = Field(
        default=None, description="why the answer broke consilium's answer schema (more than three sentences, no "
                                  "JSON object, ...), when the run kept it (config schema_failure: record) as the "
                                  "one the official extraction finds in the raw response: a format finding; null "
                                  "when it kept the schema (traces before schema 1.9: null)")
    notes: list[str] = Field(default_factory=list)
