"""The sync twin of every async API function, generated rather than written out (docs/api.md).

The library is async first: each function is an ``a…`` coroutine. :func:`sync_twin` makes its plain twin, with
the same parameters, defaults and annotations (``inspect.signature`` shows it), which runs the coroutine to its
result: on a fresh event loop, or, where one is already running (a Jupyter cell), on a worker thread's own loop,
in the caller's context (its LangChain run config, LangSmith parent and ``--otel`` reach the run).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from consilium import aio

__all__ = ["off_loop", "run_sync", "sync_twin"]

P = ParamSpec("P")
T = TypeVar("T")


async def off_loop(func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``func`` (file and CPU work: reading a run folder, a bootstrap) on a worker thread, in the caller's
    context, so the coroutine of an API function that does such work keeps a running loop serving."""
    return await asyncio.to_thread(contextvars.copy_context().run, functools.partial(func, *args, **kwargs))


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result: on a fresh loop, or, where one is running (a notebook), on a worker thread's."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return aio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(contextvars.copy_context().run, aio.run, coro).result()


def sync_twin(func: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The plain twin of ``a<name>``: named ``<name>``, same signature, and a docstring pointing at it."""
    if not func.__name__.startswith("a") or not inspect.iscoroutinefunction(func):
        raise TypeError(f"{func.__qualname__}: a sync twin is made of an async function named a<name>")

    @functools.wraps(func)
    def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(func(*args, **kwargs))

    name = func.__name__[1:]
    twin.__name__, twin.__qualname__ = name, func.__qualname__.rsplit(".", 1)[0] + f".{name}" \
        if "." in func.__qualname__ else name
    twin.__doc__ = f":func:`{func.__name__}`, from plain code or a notebook (its sync twin).\n\n{func.__doc__ or ''}"
    del twin.__wrapped__  # type: ignore[attr-defined]  # its own signature, not a pointer to a coroutine's
    twin.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
    twin.__twin_of__ = func  # type: ignore[attr-defined]
    return twin
