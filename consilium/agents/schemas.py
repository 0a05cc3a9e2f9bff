"""Structured outputs of the consilium agents, apart from the graph state (STYLE.md 5).

Section names follow ai-consilium.txt, Table 29 (physician instructions): a
structured role opinion covers clinical data, syndromes, differential
diagnosis, diagnostic strategy, management strategy and a separate final
conclusion; a structured final report gives the final opinion, summary, final
differential diagnosis, diagnostic plan, management plan and safety warnings.

Opinions and reports have one length budget per text, shared by both formats
(docs/consilium.md, "Length budget"): a structured answer's section caps sum to
the budget and a free-form answer is checked against the same budget, so that
the paper's format comparison is not also a comparison of room.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from consilium.models import OutputSchema
from consilium.models.structured import OutputInvalid

__all__ = [
    "OPINION_SECTIONS",
    "REPORT_SECTIONS",
    "RoleAssignmentAnswer",
    "RoleLabels",
    "RoleProposal",
    "VoteAnswer",
    "assignment_schema",
    "free_text_schema",
    "length_prompt",
    "opinion_schema",
    "report_schema",
    "revision_schema",
    "section_caps",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Length bounds on every string: grammar-constrained decoding then always
# terminates, even when a small model starts to repeat itself. The sections of
# opinions and reports take theirs from the run's length budget (section_caps).
LABEL = Field(min_length=2, max_length=80)
LINE = Field(max_length=240)
REASON = Field(max_length=400)


#: How the moderator names the panel: "catalogue" picks each label from the role catalogue's names (a schema
#: enum), "free" names specialists freely, as in the paper (docs/consilium.md, "Role assignment").
RoleLabels = Literal["catalogue", "free"]


class RoleProposal(_Strict):
    label: str = LABEL
    justification: str = LINE


class RoleAssignmentAnswer(_Strict):
    primary: RoleProposal
    supporting: list[RoleProposal]


@cache
def assignment_schema(min_roles: int, max_roles: int, labels: tuple[str, ...] | None = None) -> OutputSchema:
    """The assignment schema with the configured panel size as minItems/maxItems on ``supporting``,
    so grammar-constrained backends cannot return a panel of the wrong size. ``labels`` (role_labels
    "catalogue") makes every label an ``enum`` of those names; None leaves labels free text (the paper's)."""
    schema: dict[str, Any] = RoleAssignmentAnswer.model_json_schema()
    supporting = schema["properties"]["supporting"]
    supporting["minItems"] = max(0, min_roles - 1)
    supporting["maxItems"] = max_roles - 1
    if labels is not None:
        schema["$defs"]["RoleProposal"]["properties"]["label"] = {"type": "string", "enum": list(labels)}
    return OutputSchema(name="RoleAssignment", json_schema=schema, model=RoleAssignmentAnswer)


#: A structured opinion's sections and a structured report's, in order (ai-consilium.txt, Table 29).
OPINION_SECTIONS: tuple[str, ...] = ("clinical_data", "syndromes", "differential_diagnosis", "diagnostic_strategy",
                                     "management_strategy", "final_conclusion")
REPORT_SECTIONS: tuple[str, ...] = ("final_opinion", "summary", "final_differential", "diagnostic_plan",
                                    "management_plan", "safety_warnings")


class VoteAnswer(_Strict):
    vote: Literal["accept", "dissent"]
    reason: str = REASON
    requested_change: str | None = Field(default=None, max_length=400)


def section_caps(budget_chars: int, sections: tuple[str, ...]) -> dict[str, int]:
    """Each section's ``maxLength``: the budget split evenly, the remainder to the first sections,
    so that the caps sum to exactly ``budget_chars``."""
    share, extra = divmod(budget_chars, len(sections))
    return {name: share + (1 if i < extra else 0) for i, name in enumerate(sections)}


def _sections_model(name: str, budget_chars: int, sections: tuple[str, ...]) -> type[BaseModel]:
    fields: dict[str, Any] = {key: (str, Field(max_length=cap))
                              for key, cap in section_caps(budget_chars, sections).items()}
    return create_model(name, __base__=_Strict, **fields)


@cache
def _opinion_model(budget_chars: int) -> type[BaseModel]:
    return _sections_model("StructuredOpinion", budget_chars, OPINION_SECTIONS)


@cache
def _report_model(budget_chars: int) -> type[BaseModel]:
    return _sections_model("StructuredReport", budget_chars, REPORT_SECTIONS)


@cache
def _revision_model(budget_chars: int, structured: bool) -> type[BaseModel]:
    report: Any = (_report_model(budget_chars), ...) if structured else (str, Field(max_length=budget_chars))
    return create_model("StructuredRevision" if structured else "FreeFormRevision", __base__=_Strict,
                        changed=(bool, ...), change_summary=(str, REASON), report=report)


def opinion_schema(budget_chars: int) -> OutputSchema:
    """The structured opinion's schema, its sections sharing ``budget_chars``."""
    return OutputSchema.from_model(_opinion_model(budget_chars))


def report_schema(budget_chars: int) -> OutputSchema:
    """The structured report's schema, its sections sharing ``budget_chars``."""
    return OutputSchema.from_model(_report_model(budget_chars))


def revision_schema(budget_chars: int, structured: bool) -> OutputSchema:
    """A revision's schema; its ``report`` has ``budget_chars`` in either format."""
    return OutputSchema.from_model(_revision_model(budget_chars, structured))


@cache
def free_text_schema(name: str, budget_chars: int) -> OutputSchema:
    """A free-form answer held to the budget that a structured answer's sections share. One over it is
    invalid: recorded and repaired as an over-long section is (wrappers/repair.py), never cut."""

    def check(text: str) -> str:
        answer = text.strip()
        if len(answer) > budget_chars:
            raise OutputInvalid(f"the answer is {len(answer)} characters long, over its length budget of "
                                f"{budget_chars} characters")
        return answer

    return OutputSchema.from_check(name, check, repair=f"Reply again with the whole answer in plain prose, in at "
                                                      f"most {budget_chars} characters, with nothing before or "
                                                      f"after it.")


def length_prompt(task: str, budget_chars: int, sections: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """The prompt file of ``task`` and the budget placeholders it states: ``{budget_chars}`` and, for a
    structured answer, ``{section_chars}`` (each section's floor share)."""
    return task, {"budget_chars": budget_chars, "section_chars": budget_chars // len(sections)}
