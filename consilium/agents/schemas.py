"""Structured outputs of the consilium agents, apart from the graph state (STYLE.md 5).

Section names follow ai-consilium.txt, Table 29 (physician instructions): a
structured role opinion covers clinical data, syndromes, differential
diagnosis, diagnostic strategy, management strategy and a separate final
conclusion; a structured final report gives the final opinion, summary, final
differential diagnosis, diagnostic plan, management plan and safety warnings.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from consilium.models import OutputSchema

__all__ = [
    "OPINION_SECTIONS",
    "REPORT_SECTIONS",
    "FreeFormRevision",
    "RoleAssignmentAnswer",
    "RoleProposal",
    "StructuredOpinion",
    "StructuredReport",
    "StructuredRevision",
    "VoteAnswer",
    "assignment_schema",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Length bounds on every string: grammar-constrained decoding then always
# terminates, even when a small model starts to repeat itself. They are
# generous for real clinical text (about 150-1000 words per field).
LABEL = Field(min_length=2, max_length=80)
LINE = Field(max_length=240)
REASON = Field(max_length=400)
SECTION = Field(max_length=800)
PROSE = Field(max_length=6000)


class RoleProposal(_Strict):
    label: str = LABEL
    justification: str = LINE


class RoleAssignmentAnswer(_Strict):
    primary: RoleProposal
    supporting: list[RoleProposal]


@cache
def assignment_schema(min_roles: int, max_roles: int) -> OutputSchema:
    """The assignment schema with the configured panel size as minItems/maxItems on ``supporting``,
    so grammar-constrained backends cannot return a panel of the wrong size."""
    schema: dict[str, Any] = RoleAssignmentAnswer.model_json_schema()
    supporting = schema["properties"]["supporting"]
    supporting["minItems"] = max(0, min_roles - 1)
    supporting["maxItems"] = max_roles - 1
    return OutputSchema(name="RoleAssignment", json_schema=schema, model=RoleAssignmentAnswer)


class StructuredOpinion(_Strict):
    clinical_data: str = SECTION
    syndromes: str = SECTION
    differential_diagnosis: str = SECTION
    diagnostic_strategy: str = SECTION
    management_strategy: str = SECTION
    final_conclusion: str = SECTION


class StructuredReport(_Strict):
    final_opinion: str = SECTION
    summary: str = SECTION
    final_differential: str = SECTION
    diagnostic_plan: str = SECTION
    management_plan: str = SECTION
    safety_warnings: str = SECTION


OPINION_SECTIONS: tuple[str, ...] = tuple(StructuredOpinion.model_fields)
REPORT_SECTIONS: tuple[str, ...] = tuple(StructuredReport.model_fields)


class VoteAnswer(_Strict):
    vote: Literal["accept", "dissent"]
    reason: str = REASON
    requested_change: str | None = Field(default=None, max_length=400)


class FreeFormRevision(_Strict):
    changed: bool
    change_summary: str = REASON
    report: str = PROSE


class StructuredRevision(_Strict):
    changed: bool
    change_summary: str = REASON
    report: StructuredReport
