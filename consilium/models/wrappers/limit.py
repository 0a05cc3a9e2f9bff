"""A bound on concurrent calls to one backend, admitting the least advanced work item first.

A cohort is many cases, each a chain of dependent steps (assign roles →
opinions → synthesis → votes → revision → votes …). Admitted first come,
first served, the cases drift apart: some race ahead, and the run ends with
a tail of late cases whose remaining steps cannot fill the server. Admitted
least-advanced-case first, the cases move in step and the server stays full
to the end — the ordering that meets the critical-path bound when every case
has the same shape (benchmarks/results.md, section 2). A case is marked with
:func:`work_item`; calls outside one are admitted in arrival order. A work item may carry a key (its
case id), by which a replica pool keeps a case's calls on one replica (wrappers/pool.py).

A backend that serves one call at a time and keeps only the last call's tokens (llama.cpp, which
declares ``slots = 1``) is different: in step, the cases interleave, and each call finds another
case's prompt loaded and recomputes its own prefix. For such a backend one call is admitted at a time,
and a freed slot goes to the loaded work item (the one whose call was just served) while it has a call
waiting; if it has none, the slot is held for it until it asks again (its next step is a few ms of
CPU away), it ends, or :data:`HOLD_S` passes, and only then goes to the least advanced item. A
one-slot server is busy whichever case it serves, so finishing a case before the next costs nothing.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel

__all__ = ["HOLD_S", "KEEP_LOADED_CASE", "ConcurrencyLimitedModel", "current_work_key", "work_item"]

#: Whether a one-slot backend's freed slot goes to the loaded work item first (the default). False gives
#: such a backend the ordinary admission; the benchmark sets it to measure what it saves
#: (benchmarks/embedded.py).
KEEP_LOADED_CASE = True
#: The longest a freed slot is held for the loaded work item's next call while others wait: a bound for
#: an item busy elsewhere (a moderator on another model); recomputing a prefix costs seconds of prefill.
HOLD_S = 1.0


class _WorkItem:
    """One case's calls (both formats, or a board meeting): how many it has made, its key, and who to
    tell when it ends."""

    __slots__ = ("calls", "key", "on_end")

    def __init__(self, key: str | None) -> None:
        self.calls = 0
        self.key = key
        self.on_end: list[Callable[[], None]] = []


_item: ContextVar[_WorkItem | None] = ContextVar("consilium_work_item", default=None)


@contextmanager
def work_item(key: str | None = None) -> Iterator[None]:
    """Mark the calls made inside as one work item, whose progress orders its calls' admission; ``key``
    (the case id) names it for routing."""
    item = _WorkItem(key)
    token = _item.set(item)
    try:
        yield
    finally:
        _item.reset(token)
        ended, item.on_end = item.on_end, []
        for callback in ended:
            callback()


def current_work_key() -> str | None:
    """The key of the work item the current call belongs to (None outside one, or for an unnamed one)."""
    item = _item.get()
    return item.key if item is not None else None


#: A waiting call: its item's progress, its arrival order, its admission and its item.
_Waiter = tuple[int, int, asyncio.Future[None], _WorkItem | None]


class ConcurrencyLimitedModel(WrapperModel):
    """At most ``max_concurrency`` calls in flight, the least advanced work item first; one at a time, the
    loaded item first, for a backend that declares ``slots = 1`` (unless ``keep_loaded_case`` is False)."""

    def __init__(self, inner: ChatModel, max_concurrency: int, *, keep_loaded_case: bool | None = None) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        keep = KEEP_LOADED_CASE if keep_loaded_case is None else keep_loaded_case
        #: The one-slot policy is on: one call at a time, the loaded work item's first.
        self.keeps_loaded_case = keep and getattr(inner, "slots", None) == 1
        super().__init__(inner)
        self.max_concurrency = max_concurrency
        self._free = 1 if self.keeps_loaded_case else max_concurrency
        self._waiting: list[_Waiter] = []
        self._order = itertools.count()
        # One-slot policy: each item's waiters as well (an entry admitted from one heap is skipped in the
        # other, its future being done), the loaded item, and the timer of a slot held for it.
        self._by_item: dict[_WorkItem, list[_Waiter]] = {}
        self._loaded: _WorkItem | None = None
        self._held: asyncio.TimerHandle | None = None
        self.in_flight = 0
        self.peak_in_flight = 0

    async def _acquire(self, priority: int, item: _WorkItem | None) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            self._loaded = item
            return
        if self._held is not None and item is not None and item is self._loaded:
            self._held.cancel()  # the loaded item's next call, while its slot is held: the slot is its
            self._held = None
            return
        admitted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (priority, next(self._order), admitted, item)
        heapq.heappush(self._waiting, entry)
        if self.keeps_loaded_case and item is not None:
            heapq.heappush(self._by_item.setdefault(item, []), entry)
        try:
            await admitted
        except asyncio.CancelledError:
            if admitted.done() and not admitted.cancelled():
                self._release()  # admitted just as it was cancelled: pass the slot on
            raise

    def _release(self) -> None:
        loaded = self._loaded
        if self.keeps_loaded_case and loaded is not None:
            if self._admit_own(loaded):
                return
            if any(not admitted.done() for _, _, admitted, _ in self._waiting):
                self._held = asyncio.get_running_loop().call_later(HOLD_S, self._hand_on)
                loaded.on_end.append(self._ended(loaded))
                return
        self._hand_on()

    def _ended(self, item: _WorkItem) -> Callable[[], None]:
        """Called when ``item`` ends: a slot still held for it goes on at once."""
        def ended() -> None:
            self._by_item.pop(item, None)
            if self._held is not None and self._loaded is item:
                self._held.cancel()
                self._hand_on()
        return ended

    def _hand_on(self) -> None:
        """The slot to the least advanced waiting call, or back to the free count."""
        self._held = None
        while self._waiting:
            _, _, admitted, item = heapq.heappop(self._waiting)
            if not admitted.done():  # skip waiters cancelled (or admitted by their item) while queued
                self._loaded = item
                admitted.set_result(None)
                return
        self._free += 1

    def _admit_own(self, item: _WorkItem) -> bool:
        """Admit ``item``'s least advanced waiting call, if it has one."""
        heap = self._by_item.get(item)
        while heap:
            _, _, admitted, _ = heapq.heappop(heap)
            if not admitted.done():
                admitted.set_result(None)
                return True
        self._by_item.pop(item, None)
        return False

    async def generate(self, request: ModelRequest) -> ModelResponse:
        item = _item.get()
        priority = item.calls if item is not None else 0
        if item is not None:
            item.calls += 1
        await self._acquire(priority, item)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self.inner.generate(request)
        finally:
            self.in_flight -= 1
            self._release()
