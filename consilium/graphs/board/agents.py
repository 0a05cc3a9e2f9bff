"""Tumor-board participants (opentumorboard.txt, §2.4, App. B.1–B.2): the moderator, the
specialists, the single-call board writer and the Specialist Turn answerer."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from consilium.agents.prompting import case_messages
from consilium.agents.records import AssignedRole
from consilium.errors import IncompleteAnswerError, ModelOutputError
from consilium.graphs.board.moderator_schema import MODERATOR, answer_schema, pass_offered
from consilium.graphs.board.transcript import Turn, one_line, split_sentences
from consilium.graphs.board.validate import diagnostics
from consilium.models import CallTag, ChatModel, GenerationSettings, Message, ModelRequest, OutputSchema
from consilium.models.structured import OutputInvalid
from consilium.otb.answer import official_answer

__all__ = [
    "MODERATOR",
    "BoardCall",
    "Conclusion",
    "ModeratorMove",
    "TurnAnswer",
    "TurnReply",
    "answer_turn",
    "moderator_turn",
    "render_turns",
    "specialist_speaks",
    "write_conclusion",
    "write_single_board",
]

#: The board's prompts are in this package's ``prompts/`` folder.
PROMPTS = "consilium.graphs.board"


@dataclass(frozen=True)
class BoardCall:
    """What every board call shares: the model, the case text, slide images (each sent next to its caption,
    ``captions``; none for a text-only model, which reads the captions in the case text) and settings."""

    model: ChatModel
    case_text: str
    images: tuple[str, ...]
    settings: GenerationSettings
    captions: tuple[str, ...] = ()
    #: A user's own system prompt (``--prompt-file``) and the case in the authors' user message, sent instead of
    #: consilium's messages at this call's stage; None: consilium's.
    own: tuple[str, str] | None = None


@dataclass(frozen=True)
class ModeratorMove:
    """The moderator's decision: ask a specialist (a moderator turn with a question), pass the floor to
    one without a turn of its own so that they reply directly to another specialist's turn
    (``responds_to``), or close the meeting."""

    action: Literal["ask", "pass", "close"]
    speaker: AssignedRole
    message: str
    responds_to: int | None = None


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


class ModeratorSentences(BaseModel):
    """The moderator's instructions and answer formats (prompts/moderator.yaml), byte for byte."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    open_meeting: str
    time_up: str
    move_on: str
    either: str
    joined_by: str
    end: str
    option_ask: str
    option_pass: str
    option_close: str
    format_open: str


@cache
def moderator_sentences() -> ModeratorSentences:
    text = resources.files(PROMPTS).joinpath("prompts", "moderator.yaml").read_text(encoding="utf-8")
    return ModeratorSentences.model_validate(yaml.safe_load(text))


def _table(roles: list[AssignedRole]) -> str:
    """The specialists at the table, in the order assigned: the same text in every call of a meeting, ahead
    of the transcript, so each call shares its prefix with the one before (vLLM prefix caching)."""
    return ", ".join(r.label for r in roles)


def _instruction(turns: list[Turn], actions: list[str]) -> str:
    said = moderator_sentences()
    if not turns:
        return said.open_meeting
    if actions == ["close"]:
        return said.time_up
    # Speakers take the floor more than once and a turn may answer the previous turn or disagree
    # (opentumorboard.txt App. B.2): the moderator may let a specialist reply to a colleague directly.
    options = [text for action, text in (("ask", said.option_ask), ("pass", said.option_pass),
                                         ("close", said.option_close)) if action in actions]
    return said.move_on + (said.either if len(options) > 1 else "") + said.joined_by.join(options) + said.end


async def moderator_turn(call: BoardCall, roles: list[AssignedRole], turns: list[Turn], *, may_close: bool,
                         must_close: bool = False, may_pass: bool = False, may_ask: bool = True) -> ModeratorMove:
    """The moderator presents, gives the floor to a named specialist with a question, passes it for a
    direct reply, or closes. Closing is offered once at least two specialists have spoken (``may_close``)
    and is the only choice at the turn limit (``must_close``). ``may_ask`` is false with two turns left,
    where a question and its answer would leave no turn for the closing."""
    labels = [r.label for r in roles]
    if must_close:
        actions = ["close"]
    else:
        passing = may_pass and pass_offered(labels, turns)
        others = (["pass"] if passing else []) + (["close"] if may_close else [])
        actions = (["ask"] if may_ask or not others else []) + others
    # The rules across fields are in the union schema (moderator_schema.py) and checked after decoding.
    schema = answer_schema(labels, actions, turns)
    request = ModelRequest(
        messages=case_messages(call.case_text, "board_moderator", preamble="board_preamble", package=PROMPTS,
                               images=call.images,
                               captions=call.captions, roles=_table(roles), transcript=render_turns(turns),
                               instruction=_instruction(turns, actions),
                               answer_format=moderator_sentences().format_open),
        settings=call.settings, schema=schema, tag=CallTag(stage="board_turn", role="moderator", round=len(turns) + 1),
    )
    parsed: dict[str, Any] = (await call.model.generate(request)).parsed
    speaker = next(r for r in roles if r.label == parsed["speaker"])
    responds_to = parsed.get("responds_to") if parsed["action"] != "close" else None
    return ModeratorMove(parsed["action"], speaker, one_line(parsed["message"]), responds_to)


def _floor_text(turns: list[Turn], question: str, responds_to: int | None, passed: bool) -> str:
    if responds_to is None:
        return f"The Moderator has just asked you: {question}"
    said = next(t for t in turns if t.number == responds_to)
    if passed:
        return (f"The Moderator passes you the floor to reply directly to the {said.role} (turn {said.number}); "
                f"the point to take up: {question}")
    return f"The Moderator has just asked you, about what the {said.role} said in turn {said.number}: {question}"


async def specialist_speaks(call: BoardCall, roles: list[AssignedRole], role: AssignedRole, turns: list[Turn],
                            question: str, *, responds_to: int | None = None, passed: bool = False) -> str:
    request = ModelRequest(
        messages=case_messages(call.case_text, "board_specialist", preamble="board_preamble", package=PROMPTS,
                               images=call.images,
                               captions=call.captions, roles=_table(roles), role_label=role.label,
                               transcript=render_turns(turns),
                               floor=_floor_text(turns, question, responds_to, passed)),
        settings=call.settings, tag=CallTag(stage="board_turn", role=role.id, round=len(turns) + 1),
    )
    text = one_line((await call.model.generate(request)).text)
    prefix = f"{role.label}:"
    return (text[len(prefix):].strip() if text.startswith(prefix) else text) or "(no answer)"


async def write_conclusion(call: BoardCall, roles: list[AssignedRole], turns: list[Turn]) -> str:
    request = ModelRequest(
        messages=case_messages(call.case_text, "board_conclusion", preamble="board_preamble", package=PROMPTS,
                               images=call.images,
                               captions=call.captions,
                               roles=_table(roles), transcript=render_turns(turns)),
        settings=call.settings, schema=OutputSchema.from_model(Conclusion),
        tag=CallTag(stage="conclusion", role="moderator"),
    )
    return one_line((await call.model.generate(request)).parsed["conclusion"])


def _transcript_check(text: str) -> str:
    """A transcript is sent back until every diagnostic check passes (stricter than the official score's exact
    credit, consilium/graphs/board/validate.py)."""
    failed = [c for c in diagnostics(text.strip()) if not c.passed]
    if failed:
        problems = "; ".join(f"{c.name}: {c.detail}" for c in failed)
        raise OutputInvalid(f"the transcript breaks the format ({problems})")
    return text.strip()


def own_messages(call: BoardCall) -> tuple[Message, ...] | None:
    """The user's prompt as the system message and the authors' user message, the slide images (if sent) beside
    it: the captions are in its text, as in the authors' message; None without a prompt file."""
    if call.own is None:
        return None
    system, user = call.own
    return Message(role="system", content=system), Message(role="user", content=user, images=call.images)


async def write_single_board(call: BoardCall) -> tuple[str, bool]:
    """One call writes the whole meeting (App. B.2). An invalid transcript is sent back for a
    bounded number of repairs; if it stays invalid, the last attempt is returned with False."""
    request = ModelRequest(
        messages=own_messages(call) or case_messages(call.case_text, "board_single", preamble="board_preamble",
                                                     package=PROMPTS, images=call.images, captions=call.captions),
        settings=call.settings, schema=OutputSchema.from_check("BoardTranscript", _transcript_check),
        tag=CallTag(stage="board_turn", role="board"),
    )
    try:
        return (await call.model.generate(request)).parsed, True
    except IncompleteAnswerError:
        raise  # an empty or cut-off meeting is a failed stage, not a transcript that breaks the format
    except ModelOutputError as exc:
        return exc.last_text.strip(), False


@dataclass(frozen=True)
class TurnReply:
    """The Specialist Turn's answer, and why it broke consilium's answer schema when it was kept anyway (None
    when it kept it)."""

    answer: str
    schema_failure: str | None = None


def _kept(exc: ModelOutputError) -> TurnReply:
    """An answer that broke the schema, kept as the official evaluation keeps every response: the answer its
    extraction finds in the raw text (consilium/otb/answer.py). A response in which it finds none is still a
    failed turn, its error saying so."""
    found = official_answer(exc.last_text)
    if not found.text:
        raise ModelOutputError(f"{exc}; the official extraction finds no answer in it either ({found.method})",
                               stage=exc.stage, last_text=exc.last_text) from exc
    return TurnReply(one_line(found.text), schema_failure=str(exc))


async def answer_turn(call: BoardCall, role_label: str, question: str, *, keep_malformed: bool = False) -> TurnReply:
    """The Specialist Turn task (App. B.1). An answer that still breaks the schema after the repairs fails the
    turn, or with ``keep_malformed`` is kept with the reason (:func:`_kept`); an empty or cut-off answer the model
    layer refused fails it either way."""
    request = ModelRequest(
        messages=own_messages(call) or case_messages(call.case_text, "specialist_turn", preamble="board_preamble",
                                                     package=PROMPTS, images=call.images, captions=call.captions,
                                                     role_label=role_label, question=one_line(question)),
        settings=call.settings, schema=OutputSchema.from_model(TurnAnswer),
        tag=CallTag(stage="specialist_turn", role=role_label),
    )
    try:
        return TurnReply(one_line((await call.model.generate(request)).parsed["answer"]))
    except IncompleteAnswerError:
        raise  # no answer to keep
    except ModelOutputError as exc:
        if not keep_malformed:
            raise
        return _kept(exc)
