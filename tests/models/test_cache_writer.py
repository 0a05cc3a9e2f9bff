"""The response cache writes off the event loop and loses nothing it was given.

A slow commit is made real, not timed: another connection holds SQLite's write lock, so every commit
waits for it, and the tests count what the event loop did meanwhile.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from consilium.models import CallTag, Message, ModelRequest
from consilium.models.backends.scripted import Script, ScriptedModel, ScriptRule
from consilium.models.wrappers import CachedModel


def req(text: str) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), tag=CallTag(stage="opinion"))


def answers(n: int) -> ScriptedModel:
    return ScriptedModel(Script(rules=[ScriptRule(responses=[f"answer {i}" for i in range(n)])]))


def committed(path: Path) -> int:
    with sqlite3.connect(path) as db:
        count: int = db.execute("SELECT count(*) FROM responses").fetchone()[0]
    return count


class WriteLock:
    """Another connection's write transaction: every commit to the file waits until it ends. A timer ends
    it in any case, so that code that commits on the event loop stalls for a while instead of for good."""

    def __init__(self, path: Path, seconds: float = 5.0) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self.db.execute("BEGIN IMMEDIATE")
        self.released = threading.Event()
        self.timer = threading.Timer(seconds, self.release)
        self.timer.start()

    def release(self) -> None:
        if not self.released.is_set():
            self.db.rollback()
            self.db.close()
            self.released.set()

    def close(self) -> None:
        self.timer.cancel()
        self.release()


@pytest.fixture
def cache_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "responses.sqlite"
    asyncio.run(CachedModel(answers(1), path).aclose())  # creates the file and its table, as any first use does
    yield path


async def test_a_slow_commit_does_not_block_the_event_loop(cache_file: Path) -> None:
    cached = CachedModel(answers(3), cache_file)
    lock = WriteLock(cache_file)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    try:
        seen = []
        for text in ("case A", "case B", "case C"):
            await cached.generate(req(text))
            await asyncio.sleep(0)
            seen.append(ticks)
        # Three misses answered and the loop kept turning, while no commit could happen yet.
        assert not lock.released.is_set()
        assert seen[0] > 0 and seen[0] < seen[1] < seen[2]
        assert committed(cache_file) == 0
        # Meanwhile a queued answer is served from memory: no second model call.
        again = await cached.generate(req("case B"))
        assert again.cached and again.text == "answer 1" and cached.inner.calls == 3  # type: ignore[attr-defined]
    finally:
        lock.close()
        task.cancel()
    await cached.flush()
    assert committed(cache_file) == 3 and cached.write_failures == 0
    await cached.aclose()


async def test_close_flushes_every_queued_write(cache_file: Path) -> None:
    cached = CachedModel(answers(20), cache_file)
    lock = WriteLock(cache_file)
    for i in range(20):
        await cached.generate(req(f"case {i}"))
    assert committed(cache_file) == 0 and not lock.released.is_set()  # all twenty still queued
    threading.Timer(0.05, lock.close).start()
    await cached.aclose()  # waits for the lock, then commits them all
    assert committed(cache_file) == 20
    with sqlite3.connect(cache_file) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_another_reader_sees_written_entries_after_a_flush(cache_file: Path) -> None:
    writer = CachedModel(answers(2), cache_file)
    reader = CachedModel(ScriptedModel(Script(default="never asked")), cache_file)  # as another process would
    await writer.generate(req("case A"))
    await writer.flush()
    hit = await reader.generate(req("case A"))
    assert hit.cached and hit.text == "answer 0" and reader.inner.calls == 0  # type: ignore[attr-defined]
    await writer.aclose()
    await reader.aclose()


CRASH = """
import asyncio, os, sys
from consilium.models import CallTag, Message, ModelRequest
from consilium.models.backends.scripted import Script, ScriptedModel, ScriptRule
from consilium.models.wrappers import CachedModel

async def main():
    cached = CachedModel(ScriptedModel(Script(default="an answer {round}")), sys.argv[1])
    for i in range(40):
        await cached.generate(ModelRequest(messages=(Message(role="user", content=f"case {i}"),),
                                           tag=CallTag(stage="opinion", round=i)))
        if i == 19:
            await cached.flush()
    os._exit(3)  # a crash: no flush, no close, no atexit

asyncio.run(main())
"""


def test_a_crash_loses_at_most_the_unflushed_writes_and_never_corrupts_the_file(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    done = subprocess.run([sys.executable, "-c", CRASH, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT count(*) FROM responses").fetchone()[0]
    assert 20 <= rows <= 40  # everything flushed survived; only later writes may be lost
