"""``SamplingParams``, ``StructuredOutputsParams`` and ``RequestOutputKind`` as vLLM (0.10.2+) names them.

Both parameter classes record the arguments they were given (``given``) and refuse unknown ones, as
vLLM's msgspec struct and dataclass do; ``guided_decoding`` is refused, as in vLLM 0.12 and later.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class RequestOutputKind(IntEnum):
    CUMULATIVE = 0  # every output holds everything decoded so far
    DELTA = 1  # every output holds what was decoded since the last
    FINAL_ONLY = 2  # one output, when the sequence finishes


@dataclass
class StructuredOutputsParams:
    json: str | dict[str, Any] | None = None
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None
    disable_any_whitespace: bool = False
    disable_additional_properties: bool = False
    whitespace_pattern: str | None = None
    structural_tag: str | None = None

    def __post_init__(self) -> None:
        kinds = [self.json, self.regex, self.choice, self.grammar, self.json_object, self.structural_tag]
        if sum(k is not None for k in kinds) != 1:
            raise ValueError("You must use one kind of structured outputs constraint "
                             f"but none or more than one are specified ({self})")


_FIELDS: dict[str, Any] = {
    "n": 1, "presence_penalty": 0.0, "frequency_penalty": 0.0, "repetition_penalty": 1.0,
    "temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "seed": None, "stop": None,
    "stop_token_ids": None, "ignore_eos": False, "max_tokens": 16, "min_tokens": 0, "logprobs": None,
    "detokenize": True, "skip_special_tokens": True, "structured_outputs": None,
    "output_kind": RequestOutputKind.CUMULATIVE,
}


class SamplingParams:
    def __init__(self, **given: Any) -> None:
        unknown = sorted(set(given) - set(_FIELDS))
        if unknown:
            raise TypeError(f"Unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
        if given.get("structured_outputs") is not None and not isinstance(given["structured_outputs"],
                                                                           StructuredOutputsParams):
            raise TypeError("structured_outputs must be a StructuredOutputsParams")
        self.given = dict(given)
        for name, default in _FIELDS.items():
            setattr(self, name, given.get(name, default))

    def __repr__(self) -> str:
        return f"SamplingParams({', '.join(f'{k}={v!r}' for k, v in self.given.items())})"
