"""One way to run the event loop: uvloop's where it is installed (not on Windows), else asyncio's,
with the garbage collector tuned for a long run. ``CONSILIUM_EVENT_LOOP=asyncio`` picks asyncio's
loop (the tests do: their network guard watches Python's sockets, which uvloop does not use).

Both matter when one process keeps dozens of calls in flight against a
server (benchmarks/results.md, section 2). uvloop does the same work with
less CPU per task switch and socket read. The collector, left at its
defaults, ran about 250 young-generation passes and two full passes in a
three-second, 64-way cohort, the full ones stalling the loop for up to
180 ms while every response waited; freezing what was loaded before the run
and collecting every 50,000 allocations instead of 700 removes the stalls.
Reference counting still frees acyclic garbage at once, so memory stays flat.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from consilium.errors import UserError

__all__ = ["GC_THRESHOLDS", "loop_factory", "run", "tuned_gc"]

T = TypeVar("T")

#: Young generation every 50,000 net allocations; older generations correspondingly rarer.
GC_THRESHOLDS = (50_000, 20, 10)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    choice = os.environ.get("CONSILIUM_EVENT_LOOP", "uvloop").strip().lower()
    if choice == "asyncio":
        return None
    if choice != "uvloop":
        raise UserError(f"CONSILIUM_EVENT_LOOP: expected uvloop or asyncio, got {choice!r}")
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


@contextmanager
def tuned_gc() -> Iterator[None]:
    """Freeze the objects alive now (modules, compiled graphs) out of collection, and collect rarely."""
    thresholds = gc.get_threshold()
    gc.freeze()  # no collection first: freezing is a constant-time move, a full pass is not
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def run(main: Coroutine[Any, Any, T]) -> T:
    with tuned_gc(), asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
