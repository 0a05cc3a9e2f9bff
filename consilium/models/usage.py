"""Token usage: a value that adds up, and a ledger grouped by stage, role and round (STYLE.md 6)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from consilium.errors import BudgetExceededError
from consilium.stages import declared_stages

__all__ = ["Usage", "UsageLedger", "stage_order"]

class Usage(BaseModel):
    """Tokens and calls. ``estimated`` is true when any part was counted with tiktoken
    rather than reported by the server. ``reasoning_tokens`` is the part of ``output_tokens`` a
    reasoning model spent thinking (OpenAI counts it in ``completion_tokens``), not an addition."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    calls: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            calls=self.calls + other.calls,
            estimated=self.estimated or other.estimated,
        )

    def __radd__(self, other: object) -> Usage:
        # Lets sum() start from 0.
        if other == 0:
            return self
        if isinstance(other, Usage):
            return other + self
        return NotImplemented

    @classmethod
    def total(cls, items: Iterable[Usage]) -> Usage:
        return sum(items, cls())


class UsageLedger:
    """Every call's usage with its stage, role and round; sums per group on demand.

    Usage is kept *as generated*: what the model reported for each answer, a response-cache hit
    replaying the usage of the call that produced it. What this run *spent* leaves the hits out
    (:attr:`spent`, :attr:`cache_hits`). ``budget_tokens`` (input + output) is checked against the
    spent tokens *before* a call by :meth:`check_budget`, so a run stops before a call could spend
    past the budget, and an answer served from the cache costs it nothing.
    """

    def __init__(self, budget_tokens: int | None = None) -> None:
        self.budget_tokens = budget_tokens
        self._entries: list[tuple[str, str | None, int | None, Usage]] = []
        self._spent = Usage()
        self.cache_hits = 0

    def add(self, usage: Usage, *, stage: str, role: str | None = None, round: int | None = None,
            cached: bool = False) -> None:
        """One call's usage as generated; ``cached``: served from the response cache, so nothing was spent."""
        self._entries.append((stage, role, round, usage))
        if cached:
            self.cache_hits += 1
        else:
            self._spent += usage

    def check_budget(self, stage: str, projected: int = 0) -> None:
        """Refuse a call that could take the spent total past the budget; ``projected`` is the call's
        estimated input tokens plus its max output tokens."""
        if self.budget_tokens is None:
            return
        spent = self._spent.total_tokens
        if spent + projected > self.budget_tokens:
            raise BudgetExceededError(
                f"token budget of {self.budget_tokens} would be exceeded by a {stage!r} call "
                f"({spent} tokens spent, up to {projected} more needed)"
            )

    @property
    def total(self) -> Usage:
        """Every call's usage as generated, cache hits included."""
        return Usage.total(entry[3] for entry in self._entries)

    @property
    def spent(self) -> Usage:
        """The usage of the calls a model answered in this run (cache hits left out)."""
        return self._spent

    def _group(self, index: int) -> dict[str, Usage]:
        groups: dict[str, Usage] = defaultdict(Usage)
        for entry in self._entries:
            key = entry[index]
            groups["-" if key is None else str(key)] += entry[3]
        return dict(groups)

    def by_stage(self) -> dict[str, Usage]:
        return self._group(0)

    def by_role(self) -> dict[str, Usage]:
        return self._group(1)

    def by_round(self) -> dict[str, Usage]:
        return self._group(2)

    def __len__(self) -> int:
        return len(self._entries)


def stage_order(present: Iterable[str]) -> list[str]:
    """The stages of a usage table in the order they are declared (consilium/stages.py: the protocols' own, then the
    judges'); a stage no one declares (a trace of a protocol not installed) follows, alphabetically."""
    found = set(present)
    declared = [s for s in declared_stages() if s in found]
    return declared + sorted(found - set(declared))
