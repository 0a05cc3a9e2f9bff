"""What the consilium agents produce, as recorded in graph state and traces."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FORMATS",
    "AssignedRole",
    "Format",
    "Opinion",
    "Report",
    "Round",
    "StopReason",
    "Vote",
    "render_sections",
]

Format = Literal["free-form", "structured"]
FORMATS: tuple[Format, ...] = ("free-form", "structured")
StopReason = Literal["consensus", "no_change", "round_limit"]


def render_sections(sections: dict[str, str]) -> str:
    """Sections as readable text, in their given order ("Final opinion: ...")."""
    return "\n".join(f"{name.replace('_', ' ').capitalize()}: {text.strip()}" for name, text in sections.items())


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AssignedRole(_Record):
    """A panel member: the model's exact label, its catalogue category, and whether it is primary."""

    id: str = Field(description="unique slug of the label within the panel; tags this role's calls")
    label: str
    category: str
    category_name: str
    primary: bool
    justification: str


class Opinion(_Record):
    role: str
    text: str = Field(description="the opinion as text (structured sections rendered)")
    sections: dict[str, str] | None = None


class Report(_Record):
    version: int = Field(description="1 is the moderator's initial synthesis; each revision adds one")
    round: int = Field(description="the review round whose dissent produced it (0 for the initial report)")
    text: str
    sections: dict[str, str] | None = None
    change_summary: str | None = None


class Vote(_Record):
    round: int
    role: str
    vote: Literal["accept", "dissent"]
    reason: str
    requested_change: str | None = None


class Round(_Record):
    round: int
    report_version: int
    votes: list[Vote]
    dissent_fraction: float
