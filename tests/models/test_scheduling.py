"""How calls are scheduled: the concurrency limit's admission order, formats side by side, the event loop."""

from __future__ import annotations

import asyncio
import gc
import time
from pathlib import Path

import pytest
from test_consilium_graph import simulate, write_script

from consilium import aio
from consilium.errors import UserError
from consilium.models import CallTag, Message, ModelRequest
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.wrappers import ConcurrencyLimitedModel, work_item


def _request(who: str) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="go"),), tag=CallTag(stage="vote", role=who))


async def test_a_freed_slot_goes_to_the_least_advanced_case_not_the_first_in_line() -> None:
    admitted: list[str] = []

    def note(request: ModelRequest) -> str:
        admitted.append(request.tag.role or "")
        return "ok"

    # One slot; every call holds it 200 ms.
    limited = ConcurrencyLimitedModel(ScriptedModel(Script(latency_ms=200), responder=note), 1)

    async def advanced() -> None:
        with work_item():
            await limited.generate(_request("a"))  # 0-200 ms
            await limited.generate(_request("a"))  # 200-400 ms
            await asyncio.sleep(0.1)  # the holder takes the slot at 450 ms
            await limited.generate(_request("a"))  # queued at ~500 ms, this case's third call

    async def holder() -> None:
        await asyncio.sleep(0.45)
        await limited.generate(_request("h"))  # 450-650 ms, outside any case

    async def fresh() -> None:
        with work_item():
            await asyncio.sleep(0.55)
            await limited.generate(_request("b"))  # queued at 550 ms, this case's first call

    await asyncio.gather(advanced(), holder(), fresh())
    # First come, first served would give a, a, h, a, b.
    assert admitted == ["a", "a", "h", "b", "a"]
    assert limited.peak_in_flight == 1 and limited.in_flight == 0


async def test_a_cancelled_waiter_gives_its_turn_away() -> None:
    limited = ConcurrencyLimitedModel(ScriptedModel(Script(default="ok", latency_ms=100)), 1)
    first = asyncio.create_task(limited.generate(_request("a")))
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(limited.generate(_request("b")))
    await asyncio.sleep(0.01)
    waiting.cancel()
    await first
    with pytest.raises(asyncio.CancelledError):
        await waiting
    # The slot was released and not leaked to the cancelled call: a new call runs at once.
    started = time.perf_counter()
    assert (await limited.generate(_request("c"))).text == "ok"
    assert time.perf_counter() - started < 0.5 and limited.in_flight == 0


def test_the_formats_of_a_case_run_side_by_side_after_the_shared_assignment(tmp_path: Path) -> None:
    model = write_script(tmp_path, votes=[])
    slow = Path(model.removeprefix("scripted:"))
    slow.write_text(slow.read_text().replace('"model": "scripted-panel"', '"model": "scripted-panel", '
                                                                          '"latency_ms": 100'))
    free, structured = simulate(tmp_path, model, "--max-concurrency", "8")
    # Both started from the one assignment, and the structured run began before the free-form one ended.
    assert structured.role_assignment_shared and structured.roles == free.roles
    assert structured.calls[0].request_hash == free.calls[0].request_hash
    structured_first_call = min(c.started_at for c in structured.calls if c.stage != "role_assignment")
    free_last_call = max(c.started_at for c in free.calls)
    assert structured_first_call < free_last_call


def test_the_cli_runs_on_uvloop_unless_told_otherwise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.setenv("CONSILIUM_EVENT_LOOP", "uvloop")
    factory = aio.loop_factory()
    assert factory is not None and type(factory()).__module__.startswith("uvloop")
    # A whole run on uvloop (scripted model: no sockets for the network guard to miss).
    traces = simulate(tmp_path, write_script(tmp_path, votes=[]))
    assert [t.status for t in traces] == ["completed", "completed"]
    monkeypatch.setenv("CONSILIUM_EVENT_LOOP", "asyncio")
    assert aio.loop_factory() is None
    monkeypatch.setenv("CONSILIUM_EVENT_LOOP", "trio")
    with pytest.raises(UserError, match="CONSILIUM_EVENT_LOOP"):
        aio.loop_factory()


def test_a_run_restores_the_collector_settings() -> None:
    before = gc.get_threshold()

    async def inside() -> tuple[int, int, int]:
        return gc.get_threshold()

    assert aio.run(inside()) == aio.GC_THRESHOLDS
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
