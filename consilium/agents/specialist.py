"""The specialist agent: an independent opinion, then a vote on each report version."""

from __future__ import annotations

from typing import Any

from consilium.agents.prompting import case_messages
from consilium.agents.records import AssignedRole, Format, Opinion, Report, Vote, render_sections
from consilium.agents.schemas import OPINION_SECTIONS, VoteAnswer, free_text_schema, length_prompt, opinion_schema
from consilium.models import CallTag, ChatModel, GenerationSettings, ModelRequest, OutputSchema

__all__ = ["cast_vote", "write_opinion"]


def _role_fields(role: AssignedRole) -> dict[str, Any]:
    return {"role_label": role.label, "role_kind": "primary" if role.primary else "supporting",
            "justification": role.justification}


async def write_opinion(model: ChatModel, case_text: str, role: AssignedRole, fmt: Format,
                        settings: GenerationSettings, budget_chars: int) -> Opinion:
    """The role's pre-consilium opinion; it sees the case and its own brief, nothing else.

    ``budget_chars`` is the opinion's length in either format.
    """
    structured = fmt == "structured"
    task, lengths = length_prompt("opinion_structured" if structured else "opinion_free_form", budget_chars,
                                  OPINION_SECTIONS)
    request = ModelRequest(
        messages=case_messages(case_text, task, **_role_fields(role), **lengths),
        settings=settings,
        schema=opinion_schema(budget_chars) if structured else free_text_schema("FreeFormOpinion", budget_chars),
        tag=CallTag(stage="opinion", role=role.id),
    )
    response = await model.generate(request)
    if structured:
        sections = {k: str(v) for k, v in response.parsed.items()}
        return Opinion(role=role.id, text=render_sections(sections), sections=sections)
    return Opinion(role=role.id, text=response.text.strip())


async def cast_vote(model: ChatModel, case_text: str, role: AssignedRole, report: Report, round: int,
                    settings: GenerationSettings) -> Vote:
    request = ModelRequest(
        messages=case_messages(case_text, "vote", role_label=role.label, version=report.version, report=report.text),
        settings=settings,
        schema=OutputSchema.from_model(VoteAnswer),
        tag=CallTag(stage="vote", role=role.id, round=round),
    )
    answer = VoteAnswer.model_validate((await model.generate(request)).parsed)
    requested = (answer.requested_change or "").strip() or None
    return Vote(round=round, role=role.id, vote=answer.vote, reason=answer.reason.strip(),
                requested_change=requested if answer.vote == "dissent" else None)
