"""What the stand-in engine answers and how it behaves, set by each test (not part of vLLM's API)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def _echo(prompt: str, params: Any) -> str:
    return "ok"


@dataclass
class Script:
    #: The answer to one request: given the prompt text and its SamplingParams.
    responder: Callable[[str, Any], str] = _echo
    #: Tokens each running sequence decodes per scheduler step, and the step's duration.
    tokens_per_step: int = 4
    step_s: float = 0.001
    #: ``get_tokenizer`` as a coroutine (vLLM 0.10.2 to 0.11) instead of a plain method (later releases).
    async_get_tokenizer: bool = False
    #: Yield every partial (cumulative) output even when FINAL_ONLY was asked for.
    stream_partials: bool = False
    #: Raised by ``from_engine_args`` when set (a model that cannot be loaded).
    fail_start: str | None = None
    #: Calls of ``from_engine_args``, successful or not.
    starts: int = 0
    #: Every engine made, oldest first.
    engines: list[Any] = field(default_factory=list)


script = Script()


def reset() -> None:
    global script
    script = Script()
