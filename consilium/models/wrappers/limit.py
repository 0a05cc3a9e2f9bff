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
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["ConcurrencyLimitedModel", "current_work_key", "work_item"]

#: Calls made so far by the current work item (one case, both formats), shared by its tasks.
_progress: ContextVar[list[int] | None] = ContextVar("consilium_work_progress", default=None)
#: The current work item's key (a case id), if it has one.
_key: ContextVar[str | None] = ContextVar("consilium_work_key", default=None)


@contextmanager
def work_item(key: str | None = None) -> Iterator[None]:
    """Mark the calls made inside as one work item, whose progress orders its calls' admission; ``key``
    (the case id) names it for routing."""
    token, key_token = _progress.set([0]), _key.set(key)
    try:
        yield
    finally:
        _key.reset(key_token)
        _progress.reset(token)


def current_work_key() -> str | None:
    """The key of the work item the current call belongs to (None outside one, or for an unnamed one)."""
    return _key.get()


class ConcurrencyLimitedModel:
    def __init__(self, inner: ChatModel, max_concurrency: int) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.inner = inner
        self.model_id = inner.model_id
        self.endpoint = inner.endpoint
        self.supports_images = inner.supports_images
        self.stage_max_tokens = inner.stage_max_tokens
        self.max_concurrency = max_concurrency
        self._free = max_concurrency
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.in_flight = 0
        self.peak_in_flight = 0

    async def _acquire(self, priority: int) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        admitted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._order), admitted))
        try:
            await admitted
        except asyncio.CancelledError:
            if admitted.done() and not admitted.cancelled():
                self._release()  # admitted just as it was cancelled: pass the slot on
            raise

    def _release(self) -> None:
        while self._waiting:
            _, _, admitted = heapq.heappop(self._waiting)
            if not admitted.done():  # skip waiters cancelled while queued
                admitted.set_result(None)
                return
        self._free += 1

    async def generate(self, request: ModelRequest) -> ModelResponse:
        progress = _progress.get()
        priority = progress[0] if progress is not None else 0
        if progress is not None:
            progress[0] += 1
        await self._acquire(priority)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self.inner.generate(request)
        finally:
            self.in_flight -= 1
            self._release()

    async def aclose(self) -> None:
        await self.inner.aclose()
