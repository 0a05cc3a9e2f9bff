"""``consilium serve``: the web studio over run folders (docs/studio-web.md), from Python.

``aserve`` runs until cancelled; ``async with running_studio(runs) as studio:`` holds a running server (its URL
and the administrator's link) for a notebook or a script that drives it, and stops it on leaving.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from consilium.api.sync import sync_twin
from consilium.errors import UserError

__all__ = ["Running", "ServeOptions", "aserve", "running_studio", "serve"]


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


def _database(database: str | None) -> str | None:
    """``--database`` checked before the server listens: a PostgreSQL URL, or a SQLite file in a folder that
    exists (the file itself may come later, from a study created in the studio); else one line naming the flag."""
    if database is None:
        return None
    from consilium.study.database import Database

    named = Database.named(database)
    file = Path(named.target)
    if named.dialect == "sqlite" and file.is_dir():
        raise UserError(f"--database: {named.display}: a folder, not a SQLite file")
    if named.dialect == "sqlite" and not file.parent.is_dir():
        raise UserError(f"--database: {named.display}: no such folder ({file.parent}) for the SQLite file")
    return database


async def _start(runs: Sequence[str | Path], options: ServeOptions | None) -> Running:
    from consilium.web.server import started

    chosen = options or ServeOptions()
    if not chosen.host.strip():  # aiohttp would listen on every address: never by an empty variable
        raise UserError("--host: empty; give an address (default 127.0.0.1: this machine only; 0.0.0.0: every "
                        "interface)")
    try:
        runner, url, admin = await started(_folders(runs), host=chosen.host, port=chosen.port,
                                           database=_database(chosen.database))
    except OSError as exc:
        raise UserError(f"serve: cannot listen on {chosen.host}:{chosen.port} ({exc.strerror or exc})") from None
    return Running(url, admin, runner.cleanup)


async def aserve(runs: Sequence[str | Path], options: ServeOptions | None = None,
                 say: Callable[[str], None] = print) -> None:
    """Serve until cancelled (Ctrl-C on the command line); ``say`` gets the URL and the administrator's link."""
    import asyncio

    async with running_studio(runs, options) as running:
        say(f"consilium serve: {running.url} (administrator: {running.admin_link})")
        await asyncio.Event().wait()


@asynccontextmanager
async def running_studio(runs: Sequence[str | Path], options: ServeOptions | None = None) -> AsyncIterator[Running]:
    """The studio running while the block runs (``async with running_studio([run]) as studio: studio.url``)."""
    running = await _start(runs, options)
    try:
        yield running
    finally:
        await running.stop()


serve = sync_twin(aserve)
