"""Tumor-board participants (opentumorboard.txt, §2.4, App. B.1–B.2): the moderator, the
specialists, the single-call board writer and the Specialist Turn answerer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from consilium.agents.prompting import case_messages
from consilium.agents.records import AssignedRole
from consilium.board.transcript import Turn, one_line, split_sentences
from consilium.board.validate import validate_transcript
from consilium.errors import IncompleteAnswerError, ModelOutputError
from consilium.models import CallTag, ChatModel, GenerationSettings, ModelRequest, OutputSchema
from consilium.models.structured import OutputInvalid

__all__ = [
    "MODERATOR",
    "BoardCall",
    "Conclusion",
    "TurnAnswer",
    "answer_turn",
    "moderator_turn",
    "render_turns",
    "specialist_speaks",
    "write_conclusion",
    "write_single_board",
]

MODERATOR = "Moderator"


@dataclass(frozen=True)
class BoardCall:
    """What every board call shares: the model, the case text, slide images and settings."""

    model: ChatModel
    case_text: str
    images: tuple[str, ...]
    settings: GenerationSettings


def render_turns(turns: list[Turn]) -> str:
    if not turns:
        return "(nothing has been said yet)"
    return "\n".join(f"<turn {t.number}> {t.role}: {t.text}" for t in turns)


class Conclusion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    conclusion: str = Field(max_length=1200)

    @field_validator("conclusion")
    @classmethod
    def _two_to_four(cls, value: str) -> str:
        count = len(split_sentences(value))
        if not 2 <= count <= 4:
            raise ValueError(f"the conclusion must have two to four sentences, not {count}")
        return value


class TurnAnswer(BaseModel):
    """The Specialist Turn answer (App. B.1): ``{"answer": str}``, at most three sentences."""

    model_config = ConfigDict(extra="forbid")

    answer: str = Field(min_length=1, max_length=900)

    @field_validator("answer")
    @classmethod
    def _at_most_three(cls, value: str) -> str:
        count = len(split_sentences(value))
        if count > 3:
            raise ValueError(f"the answer must have at most three sentences, not {count}")
        return value


def _moderator_schema(labels: list[str], may_close: bool, must_close: bool) -> OutputSchema:
    actions = ["close"] if must_close else (["ask", "close"] if may_close else ["ask"])
    return OutputSchema(name="ModeratorTurn", json_schema={
        "type": "object", "additionalProperties": False, "required": ["action", "speaker", "message"],
        "properties": {"action": {"type": "string", "enum": actions},
                       "speaker": {"type": "string", "enum": labels},
                       "message": {"type": "string", "minLength": 1, "maxLength": 700}}})


def _table(roles: list[AssignedRole]) -> str:
    """The specialists at the table, in the order assigned: the same text in every call of a meeting, ahead
    of the transcript, so each call shares its prefix with the one before (vLLM prefix caching)."""
    return ", ".join(r.label for r in roles)


async def moderator_turn(call: BoardCall, roles: list[AssignedRole], turns: list[Turn], *, may_close: bool,
                         must_close: bool = False) -> tuple[Literal["ask", "close"], AssignedRole, str]:
    """The moderator presents, gives the floor to a named specialist with a question, or closes.
    Closing is offered only once at least two specialists have spoken (``may_close``)."""
    if not turns:
        instruction = ("Open the meeting: present the case in a few sentences and give the floor to the "
                       "specialist who should speak first, with your question (action \"ask\").")
    elif must_close:
        instruction = "Time is up: close the meeting in one or two sentences (action \"close\")."
    elif may_close:
        instruction = ("Move the meeting on: either give the floor to a specialist with a question (action "
                       "\"ask\"), or, if the board has reached an actionable plan, close the meeting (action "
                       "\"close\"; speaker is then ignored).")
    else:
        instruction = "Move the meeting on: give the floor to a specialist with a question (action \"ask\")."
    labels = [r.label for r in roles]
    request = ModelRequest(
        messages=case_messages(call.case_text, "board_moderator", preamble="board_preamble", images=call.images,
                               roles=_table(roles), transcript=render_turns(turns), instruction=instruction),
        settings=call.settings, schema=_moderator_schema(labels, may_close, must_close),
        tag=CallTag(stage="board_turn", role="moderator", round=len(turns) + 1),
    )
    parsed: dict[str, Any] = (await call.model.generate(request)).parsed
    speaker = next(r for r in roles if r.label == parsed["speaker"])
    return parsed["action"], speaker, one_line(parsed["message"])


async def specialist_speaks(call: BoardCall, roles: list[AssignedRole], role: AssignedRole, turns: list[Turn],
                            question: str) -> str:
    request = ModelRequest(
        messages=case_messages(call.case_text, "board_specialist", preamble="board_preamble", images=call.images,
                               roles=_table(roles), role_label=role.label, transcript=render_turns(turns),
                               question=question),
        settings=call.settings, tag=CallTag(stage="board_turn", role=role.id, round=len(turns) + 1),
    )
    text = one_line((await call.model.generate(request)).text)
    prefix = f"{role.label}:"
    return (text[len(prefix):].strip() if text.startswith(prefix) else text) or "(no answer)"


async def write_conclusion(call: BoardCall, roles: list[AssignedRole], turns: list[Turn]) -> str:
    request = ModelRequest(
        messages=case_messages(call.case_text, "board_conclusion", preamble="board_preamble", images=call.images,
                               roles=_table(roles), transcript=render_turns(turns)),
        settings=call.settings, schema=OutputSchema.from_model(Conclusion),
        tag=CallTag(stage="conclusion", role="moderator"),
    )
    return one_line((await call.model.generate(request)).parsed["conclusion"])


def _transcript_check(text: str) -> str:
    report = validate_transcript(text.strip())
    if report.exact != 1:
        problems = "; ".join(f"{c.name}: {c.detail}" for c in report.failed)
        raise OutputInvalid(f"the transcript breaks the format ({problems})")
    return text.strip()


async def write_single_board(call: BoardCall) -> tuple[str, bool]:
    """One call writes the whole meeting (App. B.2). An invalid transcript is sent back for a
    bounded number of repairs; if it stays invalid, the last attempt is returned with False."""
    request = ModelRequest(
        messages=case_messages(call.case_text, "board_single", preamble="board_preamble", images=call.images),
        settings=call.settings, schema=OutputSchema.from_check("BoardTranscript", _transcript_check),
        tag=CallTag(stage="board_turn", role="board"),
    )
    try:
        return (await call.model.generate(request)).parsed, True
    except IncompleteAnswerError:
        raise  # an empty or cut-off meeting is a failed stage, not a transcript that breaks the format
    except ModelOutputError as exc:
        return exc.last_text.strip(), False


async def answer_turn(call: BoardCall, role_label: str, question: str) -> str:
    """The Specialist Turn task (App. B.1)."""
    request = ModelRequest(
        messages=case_messages(call.case_text, "specialist_turn", preamble="board_preamble", images=call.images,
                               role_label=role_label, question=one_line(question)),
        settings=call.settings, schema=OutputSchema.from_model(TurnAnswer),
        tag=CallTag(stage="specialist_turn", role=role_label),
    )
    return one_line((await call.model.generate(request)).parsed["answer"])
