"""Reasoning models: which request settings they refuse, and their reasoning text kept apart from the answer.

Two things differ from a plain chat model (docs/models.md, "Reasoning models"):

* The request. OpenAI's o-series and gpt-5 family refuse ``max_tokens`` (they take
  ``max_completion_tokens``) and any temperature or top_p but their fixed one. :func:`request_rule`
  decides both from the model name; a model config's ``token_param`` / ``omit_settings`` overrides it.
* The answer. DeepSeek-R1 and Qwen3 think aloud first: in the message's ``reasoning_content`` (vLLM
  with a reasoning parser) or in a leading ``<think>…</think>`` block of the content.
  :func:`split_reasoning` takes that block off, so the answer that is parsed and judged is the answer
  alone; the reasoning goes to the trace beside it.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

__all__ = ["SAMPLING_SETTINGS", "TOKEN_PARAMS", "OmittableSetting", "TokenParam", "is_openai_reasoning_model",
           "request_rule", "split_reasoning"]

TokenParam = Literal["max_tokens", "max_completion_tokens"]
TOKEN_PARAMS: tuple[str, ...] = get_args(TokenParam)
#: The sampling settings a model may refuse, and which may therefore be left out of its requests.
OmittableSetting = Literal["temperature", "top_p", "seed"]
SAMPLING_SETTINGS: tuple[str, ...] = get_args(OmittableSetting)

#: OpenAI's reasoning models by name, after an optional ``vendor/`` prefix (OpenRouter, LiteLLM):
#: ``o1``, ``o3-mini``, ``o4-mini-2025-04-16``, ``gpt-5``, ``gpt-5-mini``, ``gpt-5.1``; not
#: ``gpt-5-chat-latest`` (a plain chat model) nor names that merely start with an ``o`` (``olmo``).
_OPENAI_REASONING = re.compile(r"^(?:[\w.-]+/)?(?:o\d+(?:[-.]|$)|gpt-5(?!-chat)(?:[-.]|$))", re.IGNORECASE)

_OPEN, _CLOSE = "<think>", "</think>"


def is_openai_reasoning_model(model: str) -> bool:
    """True for the model names :data:`_OPENAI_REASONING` matches (o-series, gpt-5 family)."""
    return _OPENAI_REASONING.match(model.strip()) is not None


def request_rule(model: str, token_param: str | None = None,
                 omit_settings: tuple[str, ...] | None = None) -> tuple[str, tuple[str, ...]]:
    """``(token parameter, settings left out)`` for ``model``: the name's rule, each part overridden
    when given. An OpenAI reasoning model gets ``max_completion_tokens`` and leaves out temperature,
    top_p and seed; every other model gets ``max_tokens`` and sends them all."""
    reasoning = is_openai_reasoning_model(model)
    param = token_param or ("max_completion_tokens" if reasoning else "max_tokens")
    omitted = omit_settings if omit_settings is not None else (SAMPLING_SETTINGS if reasoning else ())
    return param, tuple(s for s in SAMPLING_SETTINGS if s in omitted)


def split_reasoning(content: str) -> tuple[str | None, str]:
    """``(reasoning, answer)`` from a message's content.

    A leading ``<think>…</think>`` block (whitespace before it allowed) is the reasoning, and what
    follows it the answer. A content with a ``</think>`` but no ``<think>`` is DeepSeek-R1's form
    (its chat template opens the block in the prompt): everything before the first ``</think>`` is
    the reasoning. A ``<think>`` never closed (cut off while thinking) is all reasoning and an
    empty answer, which the answer check then treats as it treats any empty answer. Anything else
    is all answer.
    """
    stripped = content.lstrip()
    if stripped.startswith(_OPEN):
        body = stripped[len(_OPEN):]
        end = body.find(_CLOSE)
        if end < 0:
            return body.strip() or None, ""
        return body[:end].strip() or None, body[end + len(_CLOSE):].lstrip()
    end = content.find(_CLOSE)
    if end >= 0 and _OPEN not in content:
        return content[:end].strip() or None, content[end + len(_CLOSE):].lstrip()
    return None, content
