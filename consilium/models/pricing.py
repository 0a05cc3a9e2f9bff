"""What a model's tokens cost, and the dollars of a call, a stage and a trace.

A model config (or :class:`~consilium.models.options.ModelOptions`) may give :class:`Prices` in US dollars
per million tokens. Every call a priced model answers records them (``CallRecord.prices``), so a trace's
cost can be worked out from the trace alone, at any time, with the prices the run had. A call without
prices (an unpriced model, a trace written before prices existed) makes its stage's and its trace's cost
*unknown* (None, shown as "—"), never $0.

The rule, for one call: the cached prompt tokens at ``cached_input``, the rest of the prompt at ``input``,
every output token (a reasoning model's thinking included: it is a part of ``output_tokens``) at
``output``. A trace costs the sum over its calls, each repair and retry attempt included, as generated (a
response-cache hit costs what the call that produced it cost, as the trace's ``usage.total`` counts its
tokens), or with ``spent=True`` over the calls a model answered in this run (hits cost nothing, as
``usage.spent``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from consilium.models.usage import Usage

__all__ = ["PER_TOKENS", "Prices", "call_cost", "format_usd", "stage_costs", "trace_cost"]

#: Prices are per this many tokens.
PER_TOKENS = 1_000_000


class Prices(BaseModel):
    """US dollars per million tokens: ``input`` (prompt), ``cached_input`` (prompt tokens the server served
    from its prefix cache; ``input`` when not given) and ``output`` (completion, reasoning included)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    input: float = Field(ge=0, description="USD per 1M input (prompt) tokens")
    cached_input: float = Field(ge=0, description="USD per 1M cached input tokens (default: input)")
    output: float = Field(ge=0, description="USD per 1M output tokens, reasoning tokens included")

    @model_validator(mode="before")
    @classmethod
    def _cached_as_input(cls, data: Any) -> Any:
        """``cached_input`` left out (or null) is billed as ``input``; written out in full when recorded."""
        if isinstance(data, dict) and data.get("cached_input") is None and "input" in data:
            return {**data, "cached_input": data["input"]}
        return data


class PricedCall(Protocol):
    """What a cost needs of a call: a ``CallRecord`` has it."""

    @property
    def stage(self) -> str: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def cached(self) -> bool: ...
    @property
    def prices(self) -> Prices | None: ...


class PricedTrace(Protocol):
    """What a cost needs of a trace (or a judgement record): its calls."""

    @property
    def calls(self) -> Sequence[PricedCall]: ...


def call_cost(usage: Usage, prices: Prices) -> float:
    """Dollars for ``usage`` at ``prices`` (cached tokens beyond the prompt's count are taken as the prompt)."""
    cached = min(usage.cached_tokens, usage.input_tokens)
    return ((usage.input_tokens - cached) * prices.input + cached * prices.cached_input
            + usage.output_tokens * prices.output) / PER_TOKENS


def _sum(calls: Sequence[PricedCall], spent: bool) -> float | None:
    total = 0.0
    for call in calls:
        if call.prices is None:
            return None
        if not (spent and call.cached):
            total += call_cost(call.usage, call.prices)
    return total


def trace_cost(trace: PricedTrace, *, spent: bool = False) -> float | None:
    """Dollars for every call of ``trace`` (as generated; ``spent``: cache hits left out). None when the
    trace has no call or any call has no prices (a model without prices, a trace older than prices)."""
    return _sum(trace.calls, spent) if trace.calls else None


def stage_costs(trace: PricedTrace, *, spent: bool = False) -> dict[str, float | None]:
    """:func:`trace_cost` per stage, in the order the stages first appear (the usage ledger's groups)."""
    groups: dict[str, list[PricedCall]] = defaultdict(list)
    for call in trace.calls:
        groups[call.stage].append(call)
    return {stage: _sum(calls, spent) for stage, calls in groups.items()}


def format_usd(value: float | None) -> str:
    """``$0.0123`` (6 decimals under a cent), or "—" for an unknown cost."""
    if value is None:
        return "—"
    return f"${value:,.4f}" if value >= 0.01 else f"${value:.6f}"
