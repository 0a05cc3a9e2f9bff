"""A person at the table: the seat a physician takes on the panel, and their turns in the graph.

The person's role is seated after the role assignment: the first panel member whose label, else whose catalogue
category, matches the requested role takes the person's place; a role the panel lacks is added as an extra
(supporting) member, so that a study of "a physician at the table" always has the physician at it
(docs/human.md). Where that member's opinion or vote is due, its node stops the run with a LangGraph
``interrupt`` showing what a model-played member would see (the case and the member's brief; for a vote, the
report under review: members vote in parallel, so none sees another's vote) and resumes with the person's
answer, checked like a model's answer would be (the same length budget, sections and vote shape).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from consilium.agents.records import AssignedRole, Format, Opinion, Report, Vote, render_sections
from consilium.agents.schemas import OPINION_SECTIONS, VoteAnswer, free_text_schema, opinion_schema, section_caps
from consilium.datafiles import first_error
from consilium.models.structured import OutputInvalid
from consilium.roles.catalogue import load_catalogue, normalise_label

__all__ = ["SEAT_JUSTIFICATION", "AnswerInvalid", "HumanInput", "HumanPrompt", "HumanRecord", "check_answer",
           "human_opinion", "human_record", "human_vote", "opinion_from_answer", "seat_human", "vote_from_answer"]

#: The justification of a member added to the panel for the person (it also tells an added seat from a matched one).
SEAT_JUSTIFICATION = "a person at the table (simulate --human): this role was not on the assigned panel"

Stage = Literal["opinion", "vote"]
#: A person's answer as given: an opinion's text (free-form) or sections (structured); a vote's fields.
Answer = str | dict[str, str | None]


class AnswerInvalid(ValueError):
    """A person's answer that a model's answer in its place would fail: the field (None: the whole answer)
    and why."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field, self.reason = field, reason

    def at(self, key: str) -> str:
        """The message with the answer's place in an answers file (``structured.opinion.summary: …``)."""
        return f"{key}.{self.field}: {self.reason}" if self.field else f"{key}: {self.reason}"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HumanPrompt(_Record):
    """What the person is shown for one answer: what the member's model call would see."""

    stage: Stage
    format: Format
    round: int | None = None
    role_label: str
    role_kind: Literal["primary", "supporting"]
    justification: str
    case_text: str
    budget_chars: int | None = Field(default=None, description="the opinion's length budget (null on a vote)")
    sections: dict[str, int] | None = Field(default=None, description="a structured opinion's sections → caps")
    report_version: int | None = None
    report_text: str | None = None

    @property
    def key(self) -> str:
        """Where the answer sits in an answers file: ``<format>.opinion`` or ``<format>.votes.<round>``."""
        return f"{self.format}.opinion" if self.stage == "opinion" else f"{self.format}.votes.{self.round}"


class HumanInput(_Record):
    """One answer the person gave, as given (normalised as the trace records a model's): no model call, no tokens."""

    stage: Stage
    round: int | None = Field(default=None, description="the review round of a vote; null for the opinion")
    answer: Answer
    source: str = Field(description="where the answer came from: terminal, file, api or web (the studio)")


class HumanRecord(_Record):
    """Who sat at the table in a run and everything they answered (docs/human.md)."""

    role: str = Field(description="the id of the panel member the person played")
    label: str
    requested: str = Field(description="the role asked for (--human)")
    added: bool = Field(description="true when the role was not on the assigned panel and was added for the person")
    inputs: list[HumanInput] = Field(description="the person's answers, in the order given")


def seat_human(roles: list[AssignedRole], requested: str) -> tuple[list[AssignedRole], str]:
    """The panel with the person seated, and the seat's role id: the first member with the requested label,
    else the first of its catalogue category (not ``other``), else a supporting member added for the person."""
    label = " ".join(requested.split())
    key = normalise_label(label)
    for role in roles:
        if normalise_label(role.label) == key or role.id == key.replace(" ", "-"):
            return roles, role.id
    category = load_catalogue().map_label(label)
    for role in roles:
        if category.id != "other" and role.category == category.id:
            return roles, role.id
    added = AssignedRole(id=key.replace(" ", "-") or "person", label=label, category=category.id,
                         category_name=category.name, primary=False, justification=SEAT_JUSTIFICATION)
    return [*roles, added], added.id


def _brief(role: AssignedRole) -> dict[str, Any]:
    return {"role_label": role.label, "role_kind": "primary" if role.primary else "supporting",
            "justification": role.justification}


def opinion_from_answer(answer: Any, role: AssignedRole, fmt: Format, budget_chars: int | None) -> Opinion:
    """The member's opinion from the person's answer, under the checks a model's opinion meets (``budget_chars``
    None: all but the length budget, which is the run's, for the checks made before it)."""
    if fmt == "free-form":
        if not isinstance(answer, str) or not answer.strip():
            raise AnswerInvalid(None, "give the opinion as text")
        if budget_chars is None:
            return Opinion(role=role.id, text=answer.strip())
        try:
            text = free_text_schema("FreeFormOpinion", budget_chars).validate(answer)
        except OutputInvalid as exc:
            raise AnswerInvalid(None, str(exc)) from None
        return Opinion(role=role.id, text=str(text).strip())
    if not isinstance(answer, dict):
        raise AnswerInvalid(None, f"give the sections {', '.join(OPINION_SECTIONS)}")
    unknown = [name for name in answer if name not in OPINION_SECTIONS]
    if unknown:
        raise AnswerInvalid(unknown[0], f"not a section (a structured opinion has {', '.join(OPINION_SECTIONS)})")
    missing = [name for name in OPINION_SECTIONS if not str(answer.get(name) or "").strip()]
    if missing:
        raise AnswerInvalid(missing[0], f"missing (a structured opinion has {', '.join(OPINION_SECTIONS)})")
    if budget_chars is None:
        sections = {name: str(answer[name]).strip() for name in OPINION_SECTIONS}
        return Opinion(role=role.id, text=render_sections(sections), sections=sections)
    try:
        parsed = opinion_schema(budget_chars).validate(json.dumps({k: str(v) for k, v in answer.items()}))
    except OutputInvalid as exc:
        where, _, why = str(exc).split(" schema: ", 1)[-1].partition(": ")
        raise AnswerInvalid(where if why else None, why or where) from None
    sections = {name: str(parsed[name]).strip() for name in OPINION_SECTIONS}
    return Opinion(role=role.id, text=render_sections(sections), sections=sections)


def vote_from_answer(answer: Any, role: AssignedRole, round: int) -> Vote:
    """The member's vote from the person's answer, normalised as a model's vote is (no change on an accept)."""
    if not isinstance(answer, dict):
        raise AnswerInvalid(None, "give vote (accept or dissent), reason and, on a dissent, requested_change")
    try:
        checked = VoteAnswer.model_validate(answer)
    except ValidationError as exc:
        field, _, why = first_error(exc).partition(": ")
        raise AnswerInvalid(field if why else None, why or field) from None
    if not checked.reason.strip():
        raise AnswerInvalid("reason", "give a reason")
    requested = (checked.requested_change or "").strip() or None
    return Vote(round=round, role=role.id, vote=checked.vote, reason=checked.reason.strip(),
                requested_change=requested if checked.vote == "dissent" else None)


def check_answer(prompt: HumanPrompt, answer: Any) -> None:
    """Raise :class:`AnswerInvalid` for an answer the prompt's member would not accept from a model."""
    member = AssignedRole(id="person", label=prompt.role_label, category="other", category_name="Other",
                          primary=prompt.role_kind == "primary", justification=prompt.justification)
    if prompt.stage == "opinion":
        if prompt.budget_chars is None:
            raise AnswerInvalid(None, "the opinion's prompt states no length budget")
        opinion_from_answer(answer, member, prompt.format, prompt.budget_chars)
    else:
        vote_from_answer(answer, member, prompt.round or 0)


def human_opinion(role: AssignedRole, case_text: str, fmt: Format,
                  budget_chars: int) -> tuple[Opinion, HumanInput]:
    """The opinion node's part for the person's seat: stop, show the case and the brief, resume with the answer."""
    from langgraph.types import interrupt  # in the graph's node: reading answers never loads LangGraph

    caps = section_caps(budget_chars, OPINION_SECTIONS) if fmt == "structured" else None
    prompt = HumanPrompt(stage="opinion", format=fmt, case_text=case_text, budget_chars=budget_chars,
                         sections=caps, **_brief(role))
    resumed = interrupt(prompt.model_dump(mode="json"))  # {"answer": …, "source": …} (human_run.py)
    opinion = opinion_from_answer(resumed["answer"], role, fmt, budget_chars)
    given: Answer = dict(opinion.sections) if opinion.sections is not None else opinion.text
    return opinion, HumanInput(stage="opinion", answer=given, source=resumed["source"])


def human_vote(role: AssignedRole, case_text: str, fmt: Format, report: Report,
               round: int) -> tuple[Vote, HumanInput]:
    """The vote node's part for the person's seat: stop, show the report under review, resume with the vote."""
    from langgraph.types import interrupt  # in the graph's node: reading answers never loads LangGraph

    prompt = HumanPrompt(stage="vote", format=fmt, round=round, case_text=case_text, report_version=report.version,
                         report_text=report.text, **_brief(role))
    resumed = interrupt(prompt.model_dump(mode="json"))
    vote = vote_from_answer(resumed["answer"], role, round)
    answer: dict[str, str | None] = {"vote": vote.vote, "reason": vote.reason,
                                     "requested_change": vote.requested_change}
    return vote, HumanInput(stage="vote", round=round, answer=answer, source=resumed["source"])


def human_record(requested: str, values: dict[str, Any]) -> HumanRecord | None:
    """The trace's record of the person, from the graph's state (None before the seat was taken)."""
    seat = values.get("human")
    role = next((r for r in values.get("roles") or [] if r.id == seat), None)
    if role is None:
        return None
    return HumanRecord(role=role.id, label=role.label, requested=requested,
                       added=role.justification == SEAT_JUSTIFICATION,
                       inputs=list(values.get("human_inputs", [])))
