"""Live updates of a cohort's index: server-sent events while it runs.

The stream polls the folder's tables about once a second (a stat first: nothing is read while ``arms.csv``,
``judgements.csv`` and the manifest are unchanged), and sends each arm that is new or changed (finished, then
judged) as an ``arm`` event carrying its rendered row, and the progress against the manifest's plan as a
``progress`` event; a comment every 15 s keeps proxies from closing it. It ends when the browser goes away.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from aiohttp import web

from consilium.errors import UserError
from consilium.runfolder import RunFolder
from consilium.web.browse_index import progress_text, row_html
from consilium.web.browse_rows import Arm, cached_arms, completeness, folder_stamp, rubrics_of
from consilium.web.security import CSP

__all__ = ["HEARTBEAT_S", "POLL_S", "stream"]

POLL_S = 1.0
HEARTBEAT_S = 15.0


def _signature(arm: Arm) -> tuple[object, ...]:
    return (arm.row.status, arm.row.stop_reason, tuple(sorted((r, s.mean, s.items) for r, s in arm.scores.items())))


async def _send(response: web.StreamResponse, event: str, data: object) -> None:
    await response.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())


async def _progress(response: web.StreamResponse, folder: RunFolder, arms: list[Arm]) -> None:
    done = await asyncio.to_thread(completeness, folder, arms)
    await _send(response, "progress", {"text": progress_text(done, len(arms)), "arms": len(arms),
                                       "finished": done.finished if done else len(arms),
                                       "planned": done.planned if done else None,
                                       "status": done.status if done else None})


async def stream(request: web.Request, run: int, path: Path) -> web.StreamResponse:
    """The event stream of the served folder ``path``; ``?known=N`` is how many rows the page was rendered with
    (when the folder holds another number by now, every row is sent once, and the page keeps the new ones)."""
    folder = RunFolder(path)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                           "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"})
    await response.prepare(request)
    try:
        known = int(request.query.get("known", "-1"))
    except ValueError:
        known = -1
    try:
        stamp = folder_stamp(folder)
        arms = await asyncio.to_thread(cached_arms, folder)
        rubrics = rubrics_of(arms)
        seen = {arm.id: _signature(arm) for arm in arms}
        if known >= 0 and known != len(arms):
            for arm in arms:
                await _send(response, "arm", {"id": arm.id, "html": row_html(run, arm, rubrics)})
        await _progress(response, folder, arms)
        beat = time.monotonic()
        while True:
            await asyncio.sleep(POLL_S)
            now = folder_stamp(folder)
            if now != stamp:
                stamp = now
                try:
                    arms = await asyncio.to_thread(cached_arms, folder)
                except UserError:
                    continue  # a table caught mid-write: read it again on the next poll
                if set(rubrics_of(arms)) - set(rubrics):
                    await _send(response, "reload", {"why": "a new rubric's scores"})
                    return response
                for arm in arms:
                    signature = _signature(arm)
                    if seen.get(arm.id) != signature:
                        seen[arm.id] = signature
                        await _send(response, "arm", {"id": arm.id, "html": row_html(run, arm, rubrics)})
                await _progress(response, folder, arms)
                beat = time.monotonic()
            elif time.monotonic() - beat >= HEARTBEAT_S:
                await response.write(b": heartbeat\n\n")
                beat = time.monotonic()
    except ConnectionError:
        return response  # the browser went away
