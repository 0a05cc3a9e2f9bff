"""Run the studio: bind (127.0.0.1 unless a host is given), print where it is and the administrator's link once,
serve until interrupted."""

from __future__ import annotations

import asyncio
import logging
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from aiohttp import web

from consilium.web.app import make_app
from consilium.web.security import AccessLogger

__all__ = ["serve", "started"]


def _access_log() -> logging.Logger:
    """One line per request on stderr (through the CLI's masking stream): method, path, status, time."""
    log = logging.getLogger("consilium.web.access")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


async def started(runs: Sequence[Path], *, host: str = "127.0.0.1", port: int = 8765,
                  database: str | None = None) -> tuple[web.AppRunner, str, str]:
    """The running server: its runner (``await runner.cleanup()`` stops it), its URL and the administrator's
    login link (the token is random per start and printed nowhere else)."""
    token = secrets.token_urlsafe(32)
    app = make_app(runs, admin_token=token, database=database)
    runner = web.AppRunner(app, access_log_class=AccessLogger, access_log=_access_log())
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0]
    shown = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
    url = f"http://{shown}:{bound[1]}/"
    return runner, url, f"{url}login/{token}"


async def serve(runs: Sequence[Path], *, host: str = "127.0.0.1", port: int = 8765, database: str | None = None,
                say: Callable[[str], None] = print) -> None:
    """Serve until cancelled; ``say`` gets one line: the URL and the administrator's link."""
    runner, url, admin = await started(runs, host=host, port=port, database=database)
    say(f"consilium serve: {url} (administrator: {admin})")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
