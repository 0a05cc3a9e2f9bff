"""The test-wide isolation, in one place: a cache and a log file of the test's (or fixture's) own folder,
asyncio's event loop (uvloop connects sockets in C, out of the network guard's sight), and no OpenAI key or
base URL from the environment. The conftest applies it to every test; a fixture made once for a module or a
session, wider than any test, enters :func:`isolated` for its folder."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["isolate", "isolated"]


def isolate(patch: pytest.MonkeyPatch, folder: Path) -> None:
    """Set the isolation on ``patch``, its files under ``folder``."""
    patch.setenv("CONSILIUM_CACHE", str(folder / "cache.sqlite"))
    patch.setenv("CONSILIUM_LOG_FILE", str(folder / "consilium.log.jsonl"))
    patch.setenv("CONSILIUM_EVENT_LOOP", "asyncio")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        patch.delenv(name, raising=False)


@contextlib.contextmanager
def isolated(folder: Path) -> Iterator[None]:
    """The isolation while inside, for a fixture wider than a test; undone on leaving."""
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, folder)
        yield
