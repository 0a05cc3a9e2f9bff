"""Where a person's answers come from: an answers file (or the same mapping from Python), a callback, the trace
being replayed. The terminal prompt is in terminal.py.

An answers file (YAML or JSON) holds, per format, the opinion (free-form: the text; structured: the six
sections) and the votes by review round (docs/human.md)::

    free-form:
      opinion: "..."
      votes: {1: {vote: dissent, reason: "...", requested_change: "..."}, 2: {vote: accept, reason: "..."}}
    structured:
      opinion: {clinical_data: "...", syndromes: "...", ...}
      votes: {1: {vote: accept, reason: "..."}}
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from consilium.agents.records import FORMATS, AssignedRole
from consilium.datafiles import read_data_file
from consilium.errors import UserError
from consilium.graphs.consilium.seat import (
    AnswerInvalid,
    HumanPrompt,
    HumanRecord,
    opinion_from_answer,
    vote_from_answer,
)

__all__ = ["AnswerMissing", "AnswerRefused", "AnswerSource", "CallbackAnswers", "Given", "MappingAnswers",
           "TraceAnswers", "load_answers"]

_VOTE_FIELDS = ("vote", "reason", "requested_change")


class AnswerMissing(UserError):
    """The answers hold no answer for the prompt: the run pauses there (its checkpoint keeps it)."""


class AnswerRefused(UserError):
    """An answer from a file or mapping that fails the checks a model's answer meets at its prompt (its
    length budget): the run stops at that prompt, checkpointed, and resumes once the answer is corrected."""


@dataclass(frozen=True)
class Given:
    """An answer with where it came from, for a source whose answers came from several (a trace)."""

    answer: Any
    source: str


class AnswerSource(Protocol):
    """Answers one prompt with the person's answer, as given (checked by the seat; see seat.py), or a
    :class:`Given`."""

    #: How the trace names where the answers came from (terminal, file, api, web).
    name: str

    async def answer(self, prompt: HumanPrompt) -> Any: ...


class MappingAnswers:
    """Answers from a mapping shaped like an answers file; ``where`` names it in messages."""

    name = "file"

    def __init__(self, answers: Mapping[str, Any], where: str = "answers", *, name: str = "file") -> None:
        self.where, self.name = where, name
        self.answers = _checked(answers, where)

    async def answer(self, prompt: HumanPrompt) -> Any:
        given = self.answers.get(prompt.format, {})
        found = given.get("opinion") if prompt.stage == "opinion" else given.get("votes", {}).get(prompt.round)
        if found is None:
            raise AnswerMissing(f"{self.where}: {prompt.key}: missing ({_what(prompt)})")
        return found


def load_answers(path: Path) -> MappingAnswers:
    """An answers file, read by the strict reader every case and settings file goes through (no duplicate key, no
    alias that expands past its bound, bounded nesting, UTF-8 only: consilium/datafiles/), its shape checked
    before anything runs (one line naming the field if not)."""
    data = read_data_file(path, "answers file")
    return MappingAnswers(data if data is not None else {}, str(path))


def _what(prompt: HumanPrompt) -> str:
    if prompt.stage == "opinion":
        shape = "the text" if prompt.format == "free-form" else "the six sections"
        return f"the {prompt.role_label}'s opinion in the {prompt.format} format, {shape}"
    return (f"the {prompt.role_label}'s vote on report version {prompt.report_version} in review round "
            f"{prompt.round}: vote, reason, requested_change")


def _checked(data: Any, where: str) -> dict[str, dict[str, Any]]:
    """The answers by format: ``opinion`` and ``votes`` (round → fields); a misshapen one is refused, naming
    the field, and so is content a model's answer would fail anywhere (an empty opinion, a missing section,
    a reason over 400 characters). The opinion's length budget is the run's, checked when it is used."""
    if not isinstance(data, Mapping):
        raise UserError(f"{where}: (root): a mapping of formats ({', '.join(FORMATS)}) to answers")
    checked: dict[str, dict[str, Any]] = {}
    for fmt, given in data.items():
        if fmt not in FORMATS:
            raise UserError(f"{where}: {fmt}: not a format (give {' or '.join(FORMATS)})")
        if not isinstance(given, Mapping):
            raise UserError(f"{where}: {fmt}: a mapping with opinion and votes")
        unknown = [k for k in given if k not in ("opinion", "votes")]
        if unknown:
            raise UserError(f"{where}: {fmt}.{unknown[0]}: not a field (give opinion and votes)")
        opinion = given.get("opinion")
        if opinion is not None and fmt == "free-form" and not isinstance(opinion, str):
            raise UserError(f"{where}: {fmt}.opinion: the opinion's text")
        if opinion is not None and fmt == "structured" and not isinstance(opinion, Mapping):
            raise UserError(f"{where}: {fmt}.opinion: a mapping of the opinion's sections")
        votes = given.get("votes") or {}
        if not isinstance(votes, Mapping):
            raise UserError(f"{where}: {fmt}.votes: a mapping of review rounds to votes")
        checked[fmt] = {"opinion": dict(opinion) if isinstance(opinion, Mapping) else opinion,
                        "votes": {_round(r, f"{where}: {fmt}.votes.{r}"): _vote(v, f"{where}: {fmt}.votes.{r}")
                                  for r, v in votes.items()}}
        _content(checked[fmt], fmt, where)
    return checked


#: The seat's member for the checks made before the run (the message names no role).
_ANYONE = AssignedRole(id="person", label="person", category="other", category_name="Other", primary=False,
                       justification="")


def _content(given: dict[str, Any], fmt: Any, where: str) -> None:
    """The checks of seat.py that need no run: every section, a reason's bound (the budget is the run's)."""
    try:
        at = f"{fmt}.opinion"
        if given["opinion"] is not None:
            opinion_from_answer(given["opinion"], _ANYONE, fmt, None)
        for number, vote in given["votes"].items():
            at = f"{fmt}.votes.{number}"
            vote_from_answer(vote, _ANYONE, number)
    except AnswerInvalid as exc:
        raise UserError(f"{where}: {exc.at(at)}") from None


def _round(key: Any, where: str) -> int:
    try:
        number = int(key)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or str(number) != str(key).strip():
        raise UserError(f"{where}: a review round is a positive integer")
    return number


def _vote(vote: Any, where: str) -> dict[str, Any]:
    if not isinstance(vote, Mapping):
        raise UserError(f"{where}: a vote with vote, reason and requested_change")
    unknown = [k for k in vote if k not in _VOTE_FIELDS]
    if unknown:
        raise UserError(f"{where}.{unknown[0]}: not a field (give {', '.join(_VOTE_FIELDS)})")
    if isinstance(vote.get("vote"), bool):  # YAML reads yes / no / on / off as booleans
        raise UserError(f"{where}.vote: accept or dissent, not {'yes' if vote['vote'] else 'no'} (YAML reads an "
                        "unquoted yes or no as true or false: write accept or dissent)")
    if vote.get("vote") not in ("accept", "dissent"):
        raise UserError(f"{where}.vote: accept or dissent, not {vote.get('vote')!r}")
    if not isinstance(vote.get("reason"), str) or not vote["reason"].strip():
        raise UserError(f"{where}.reason: give a reason")
    return dict(vote)


class CallbackAnswers:
    """Answers from a function of the prompt (sync or async), for the Python API."""

    name = "api"

    def __init__(self, answer: Callable[[HumanPrompt], Any | Awaitable[Any]]) -> None:
        self._answer = answer

    async def answer(self, prompt: HumanPrompt) -> Any:
        given = self._answer(prompt)
        return await given if inspect.isawaitable(given) else given


class TraceAnswers:
    """The answers a trace recorded, for its replay: no prompt."""

    name = "trace"

    def __init__(self, record: HumanRecord) -> None:
        self._given = {(i.stage, i.round): Given(i.answer, i.source) for i in record.inputs}

    async def answer(self, prompt: HumanPrompt) -> Any:
        try:
            return self._given[(prompt.stage, prompt.round)]
        except KeyError:
            raise AnswerMissing(f"trace: human.inputs: holds no {prompt.key} answer ({_what(prompt)})") from None
