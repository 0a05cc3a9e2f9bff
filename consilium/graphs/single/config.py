"""Settings of a single-specialist run; stored in every trace so it replays exactly."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pydantic import Field, model_validator

from consilium.traces.config import ConfigRecord, RunConfig, StageTokens

__all__ = ["SINGLE_MAX_TOKENS", "SingleConfig", "SingleRecord", "answer_max_tokens"]

#: The answer's length budget: the consilium's report budget (docs/consilium.md, "Length budget"), so that the
#: baseline's answer and the panel's final report have the same room.
DEFAULT_BUDGET_CHARS = 4800
#: As the consilium's budget becomes max_tokens: 2.5 characters per token, plus 128 tokens for JSON keys and
#: braces, the same in both formats.
CHARS_PER_TOKEN, FRAME_TOKENS = 2.5, 128


def answer_max_tokens(budget_chars: int) -> int:
    return math.ceil(budget_chars / CHARS_PER_TOKEN) + FRAME_TOKENS


#: The role assignment is the consilium's own call (the same prompt, schema and room), so on the same case,
#: model and seed the baseline's specialist is the panel's primary role; its answer is tagged ``opinion``.
SINGLE_MAX_TOKENS: dict[str, int] = {"role_assignment": 768, "opinion": answer_max_tokens(DEFAULT_BUDGET_CHARS)}


class SingleConfig(RunConfig):
    STAGE_TOKENS: ClassVar[dict[str, int]] = SINGLE_MAX_TOKENS

    report_budget_chars: int = Field(default=DEFAULT_BUDGET_CHARS, ge=300,
                                     description="characters of the answer, in both formats: a structured "
                                                 "answer's six sections share them, a free-form one is held to them")
    max_tokens: StageTokens = Field(default_factory=lambda: dict(SINGLE_MAX_TOKENS),
                                    description="output tokens per call, by stage (role_assignment, opinion); the "
                                                "answer's default follows report_budget_chars")

    @model_validator(mode="before")
    @classmethod
    def _answer_tokens(cls, data: Any) -> Any:
        """The answer's max_tokens follows its budget unless set: the trace records what each stage had."""
        if not isinstance(data, dict) or not isinstance(data.get("max_tokens", {}), dict):
            return data
        budget = data.get("report_budget_chars", DEFAULT_BUDGET_CHARS)
        tokens = dict(SINGLE_MAX_TOKENS)
        if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 300:
            tokens["opinion"] = answer_max_tokens(budget)
        return {**data, "max_tokens": {**tokens, **data.get("max_tokens", {})}}


class SingleRecord(SingleConfig, ConfigRecord):
    """A single-specialist trace's ``config``: the run's settings and the hashes of the prompts it used."""
