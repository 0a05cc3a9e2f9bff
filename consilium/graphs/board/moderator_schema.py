"""The moderator's answer schema: every rule its answer must meet, in the JSON schema itself.

Open floor (opentumorboard.txt App. B.2): the moderator asks, passes the floor for a direct reply, or
closes. A pass must name the turn the speaker replies to, and any named turn (``responds_to``) must be an
earlier turn of another specialist. Those rules depend on the meeting so far, so the schema is built per
call: a union with one branch per action and speaker (``action`` and ``speaker`` are ``const``), whose
``responds_to`` is an ``enum`` of the turns that speaker may answer. A backend that enforces schemas
(a llama.cpp grammar, a server's ``json_schema``) then cannot produce an answer the rules refuse. The
same rules are checked again after decoding, with a message fit for a repair, for backends that do not
enforce schemas; the union is checked last, so the two can never disagree silently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from consilium.graphs.board.transcript import Turn
from consilium.models import OutputSchema
from consilium.models.structured import OutputInvalid

__all__ = [
    "MESSAGE_CHARS",
    "MODERATOR",
    "answer_schema",
    "answerable_turns",
    "floor_check",
    "moderator_schema",
    "open_floor_turns",
    "pass_offered",
]

MODERATOR = "Moderator"
#: What the moderator says (or, for a pass, the point to take up), in characters.
MESSAGE_CHARS = 700
_MESSAGE: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MESSAGE_CHARS}


def answerable_turns(turns: list[Turn], speaker: str) -> list[int]:
    """The turns ``speaker`` may reply to: every earlier specialist turn but its own."""
    return [t.number for t in turns if t.role not in (MODERATOR, speaker)]


def answer_schema(labels: list[str], actions: list[str], turns: list[Turn]) -> OutputSchema:
    """The moderator's answer schema (:func:`moderator_schema`) with its check after decoding (the rules across
    fields, :func:`floor_check`)."""
    return OutputSchema(name="ModeratorTurn", check=floor_check(labels, actions, turns),
                        json_schema=moderator_schema(labels, actions, turns))


def pass_offered(labels: list[str], turns: list[Turn]) -> bool:
    """Whether a pass may be offered: only where a speaker has a turn to reply to (else it has no branch)."""
    return open_floor_turns(labels, turns)


def _fields(labels: list[str], actions: list[str]) -> dict[str, Any]:
    """Every field's own type, without the rules across fields: the first check after decoding, whose
    messages name the field (``speaker: 'X' is not one of …``)."""
    return {"type": "object", "additionalProperties": False, "required": ["action", "speaker", "message"],
            "properties": {"action": {"type": "string", "enum": actions},
                           "speaker": {"type": "string", "enum": labels},
                           "responds_to": {"type": ["integer", "null"], "minimum": 1},
                           "message": _MESSAGE}}


def _branch(action: str, speaker: Any, responds_to: dict[str, Any] | None, *, named: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {"action": {"const": action}, "speaker": speaker}
    if responds_to is not None:
        properties["responds_to"] = responds_to
    properties["message"] = {"$ref": "#/$defs/message"}
    required = ["action", "speaker", *(["responds_to"] if named else []), "message"]
    return {"type": "object", "additionalProperties": False, "required": required, "properties": properties}


def moderator_schema(labels: list[str], actions: list[str], turns: list[Turn]) -> dict[str, Any]:
    """The open floor's answer as a union: per speaker, an ``ask`` whose ``responds_to`` is null or a turn
    that speaker may answer, a ``pass`` that must name one, and one ``close`` (its speaker and turn are
    ignored, as the prompt says). A pass is left out for a speaker with no turn to answer."""
    branches: list[dict[str, Any]] = []
    for label in labels:
        allowed = answerable_turns(turns, label)
        if "ask" in actions:
            branches.append(_branch("ask", {"const": label}, {"enum": [None, *allowed]}, named=False))
        if "pass" in actions and allowed:
            branches.append(_branch("pass", {"const": label}, {"enum": allowed}, named=True))
    if "close" in actions:
        branches.append(_branch("close", {"type": "string", "enum": labels},
                                {"type": ["integer", "null"]}, named=False))
    # "type": "object" beside the union: tool-calling APIs want an object at the root. The message is one
    # definition that every branch refers to, so a grammar holds its length bound once, not per branch.
    return {"type": "object", "anyOf": branches, "$defs": {"message": _MESSAGE}}


def open_floor_turns(labels: list[str], turns: list[Turn]) -> bool:
    """Whether any speaker has a turn to reply to (else a pass has no branch in the schema)."""
    return any(answerable_turns(turns, label) for label in labels)


def floor_check(labels: list[str], actions: list[str], turns: list[Turn]) -> Callable[[str], Any]:
    """The open-floor rules after decoding, each failure with a message for the repair, then the union."""
    fields = OutputSchema(name="ModeratorTurn", json_schema=_fields(labels, actions))
    union = OutputSchema(name="ModeratorTurn", json_schema=moderator_schema(labels, actions, turns))
    numbers = {t.number: t for t in turns}

    def check(text: str) -> Any:
        value = fields.validate(text)
        if value["action"] != "close":
            _floor_rules(value, numbers, len(turns))
        return union.validate(text)

    return check


def _floor_rules(value: dict[str, Any], numbers: dict[int, Turn], count: int) -> None:
    target = value.get("responds_to")
    if target is None:
        if value["action"] == "pass":
            raise OutputInvalid('responds_to: a "pass" must name the turn the speaker replies to')
        return
    said = numbers.get(target)
    if said is None:
        known = f"turns 1–{count}" if count else "no turns yet"
        raise OutputInvalid(f"responds_to: turn {target} does not exist (the meeting has {known})")
    if said.role == MODERATOR:
        raise OutputInvalid(f"responds_to: turn {target} is the Moderator's; name a specialist's turn, or null")
    if said.role == value["speaker"]:
        raise OutputInvalid(f"responds_to: turn {target} is the {said.role}'s own; a speaker replies to another "
                            "specialist")
