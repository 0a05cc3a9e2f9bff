"""``consilium serve``: the web studio over run folders (docs/studio-web.md), from Python.

``aserve`` runs until cancelled; ``astart`` returns the running server (its URL, the administrator's link and a
``stop`` coroutine) for a notebook or a test that drives it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from consilium.api.sync import sync_twin
from consilium.errors import UserError

__all__ = ["Running", "ServeOptions", "aserve", "astart", "serve"]


@dataclass(frozen=True)
class ServeOptions:
    """Where to listen (127.0.0.1 unless another host is given: the studio holds unblinded results) and the
    study database (None: each run folder's own ``study.sqlite3``; ``postgresql://…`` for a multi-site study)."""

    host: str = "127.0.0.1"
    port: int = 8765
    database: str | None = None


@dataclass(frozen=True)
class Running:
    """A started studio: where it is, the administrator's login link (printed once; its token is random per
    start), and how to stop it."""

    url: str
    admin_link: str
    stop: Callable[[], Awaitable[None]] = field(repr=False)


def _folders(runs: Sequence[str | Path]) -> list[Path]:
    if not runs:
        raise UserError("serve: give at least one run folder")
    folders = [Path(r) for r in runs]
    for folder in folders:
        if not folder.is_dir():
            raise UserError(f"{folder}: no such run folder")
    return folders


async def astart(runs: Sequence[str | Path], options: ServeOptions | None = None) -> Running:
    from consilium.web.server import started

    chosen = options or ServeOptions()
    try:
        runner, url, admin = await started(_folders(runs), host=chosen.host, port=chosen.port,
                                           database=chosen.database)
    except OSError as exc:
        raise UserError(f"serve: cannot listen on {chosen.host}:{chosen.port} ({exc.strerror or exc})") from None
    return Running(url, admin, runner.cleanup)


async def aserve(runs: Sequence[str | Path], options: ServeOptions | None = None,
                 say: Callable[[str], None] = print) -> None:
    """Serve until cancelled (Ctrl-C on the command line); ``say`` gets the URL and the administrator's link."""
    import asyncio

    running = await astart(runs, options)
    say(f"consilium serve: {running.url} (administrator: {running.admin_link})")
    try:
        await asyncio.Event().wait()
    finally:
        await running.stop()


serve = sync_twin(aserve)
