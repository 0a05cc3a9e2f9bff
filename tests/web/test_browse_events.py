"""The live event stream of a cohort's index, in process (aiohttp's test server): the first progress, a heartbeat
comment while nothing changes, and every row to a page rendered before the folder changed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from browse_cohort import build_browse_cohort
from support.isolation import isolated

from consilium.web import browse_events
from consilium.web.app import make_app

pytestmark = pytest.mark.localhost  # aiohttp's test server, on 127.0.0.1


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browse-events")
    with isolated(tmp):
        return build_browse_cohort(tmp)


async def test_the_stream_sends_progress_then_heartbeats_and_every_row_to_a_page_behind(
        cohort: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browse_events, "HEARTBEAT_S", 0.3)
    monkeypatch.setattr(browse_events, "POLL_S", 0.05)
    app = make_app([cohort], admin_token="t0ken")
    async with TestClient(TestServer(app)) as client:
        refused = await client.get("/runs/0/events")
        assert refused.status == 403
        await client.get("/login/t0ken")
        response = await client.get("/runs/0/events?known=12")
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        first = await asyncio.wait_for(response.content.readuntil(b"\n\n"), 10)
        assert first.startswith(b"event: progress\n") and b'"finished": 12, "planned": 12' in first
        beat = await asyncio.wait_for(response.content.readuntil(b"\n\n"), 10)
        assert beat == b": heartbeat\n\n"  # nothing changed: no arm was sent again
        response.close()
        await asyncio.sleep(0.5)  # the handler notices the closed connection on its next write, and returns
    # The page's row count differs from the folder's: every row is sent once, then the progress.
    async with TestClient(TestServer(make_app([cohort], admin_token="t0ken"))) as client:
        await client.get("/login/t0ken")
        response = await client.get("/runs/0/events?known=3")
        events = [await asyncio.wait_for(response.content.readuntil(b"\n\n"), 10) for _ in range(13)]
        assert [e.split(b"\n")[0] for e in events] == [b"event: arm"] * 12 + [b"event: progress"]
        response.close()
