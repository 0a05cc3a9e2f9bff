"""A chat-completion body read strictly: every field the backend uses has the type it should.

A server (or a proxy in front of it) can send anything: ``"model": 123``,
``finish_reason: {}``, ``prompt_tokens: Infinity``, strings with lone
surrogates, bytes that are not UTF-8. Each is a :class:`MalformedCompletion`
naming the field, which the backend turns into a (retried) model error like
any other bad response; none reaches a trace or the cache. A usage count the
server leaves out is ``None`` here, for the backend to estimate. A reasoning
model's thinking, when the server sends it apart from the content
(``reasoning_content``: vLLM's reasoning parsers, DeepSeek's API; ``reasoning``:
newer vLLM, OpenRouter), is ``reasoning``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Completion", "MalformedCompletion", "parse_completion"]


class MalformedCompletion(ValueError):
    """The body is not a chat completion; the message names the field, never its content."""


@dataclass(frozen=True)
class Completion:
    text: str
    model: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int
    reasoning: str | None = None
    reasoning_tokens: int | None = None


def _not_a_number(name: str) -> float:
    raise MalformedCompletion(f"the body holds {name}, which is not JSON")


def _object(value: Any, where: str, *, optional: bool = False) -> dict[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise MalformedCompletion(f"{where} is not an object")
    return value


def _string(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedCompletion(f"{where} is not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedCompletion(f"{where} holds a lone surrogate, not text") from None
    return value


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedCompletion(f"{where} is not a number")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise MalformedCompletion(f"{where} is not a whole number")
    if value < 0:
        raise MalformedCompletion(f"{where} is negative")
    return int(value)


def parse_completion(raw: bytes) -> Completion:
    """The parts of a ``chat.completion`` body the backend uses; raises :class:`MalformedCompletion`."""
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_not_a_number)
    except MalformedCompletion:
        raise
    except UnicodeDecodeError as exc:
        raise MalformedCompletion(f"the body is not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise MalformedCompletion(f"the body is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") \
            from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more digits than Python converts
        raise MalformedCompletion(f"the body is not readable JSON ({type(exc).__name__})") from None
    completion = _object(body, "the body")
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedCompletion("choices is not a non-empty list")
    choice = _object(choices[0], "choices[0]")
    message = _object(choice.get("message"), "choices[0].message")
    # content null: a tool_calls-only or refused answer; an empty answer, which the answer check rejects.
    text = _string(message.get("content"), "choices[0].message.content") or ""
    # ``reasoning`` is no standard field: read when it is text, ignored in any other shape.
    other = message.get("reasoning")
    reasoning = (_string(message.get("reasoning_content"), "choices[0].message.reasoning_content")
                 or _string(other if isinstance(other, str) else None, "choices[0].message.reasoning"))
    usage = _object(completion.get("usage"), "usage", optional=True)
    details = _object(usage.get("prompt_tokens_details"), "usage.prompt_tokens_details", optional=True)
    output_details = _object(usage.get("completion_tokens_details"), "usage.completion_tokens_details",
                             optional=True)
    return Completion(
        text=text,
        model=_string(completion.get("model"), "model"),
        finish_reason=_string(choice.get("finish_reason"), "choices[0].finish_reason"),
        prompt_tokens=_count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        completion_tokens=_count(usage.get("completion_tokens"), "usage.completion_tokens"),
        cached_tokens=_count(details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens") or 0,
        reasoning=reasoning or None,
        reasoning_tokens=_count(output_details.get("reasoning_tokens"),
                                "usage.completion_tokens_details.reasoning_tokens"),
    )
