"""``cohort merge --caches … --cache-out FILE``: the shards' response caches (SQLite, one per worker)
folded into one new file, for a key in two caches the first given winning."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

from consilium.errors import UserError

__all__ = ["check_caches", "merge_caches"]


def check_caches(sources: list[Path], target: Path) -> str:
    """Refuse an existing ``target`` or a source that is not a response cache, before anything is
    written; returns the caches' table schema."""
    if target.exists() or target.is_symlink():
        raise UserError(f"--cache-out: {target} exists; cohort merge writes a new cache and never overwrites one")
    schema = None
    for source in sources:
        try:
            if not source.is_file():
                raise sqlite3.OperationalError("no such file")
            with closing(sqlite3.connect(source.resolve().as_uri() + "?mode=ro", uri=True)) as db:
                found = db.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name='responses'").fetchone()
        except sqlite3.Error as exc:
            raise UserError(f"--caches: {source}: not a readable SQLite file ({exc})") from None
        if found is None:
            raise UserError(f"--caches: {source}: not a consilium response cache (no responses table)")
        schema = schema or str(found[0])
    if schema is None:
        raise UserError("--caches: no cache given")
    return schema


def merge_caches(sources: list[Path], target: Path) -> int:
    """Fold shard response caches (SQLite, one per worker) into the new file ``target``; for a key in
    two caches the first given wins. Returns how many responses it holds."""
    schema = check_caches(sources, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        with closing(sqlite3.connect(Path(tmp).resolve().as_uri(), uri=True)) as db:
            db.execute(schema)
            for i, source in enumerate(sources):
                db.execute(f"ATTACH DATABASE ? AS s{i}", (source.resolve().as_uri() + "?mode=ro",))
                db.execute(f"INSERT OR IGNORE INTO responses SELECT * FROM s{i}.responses")
                db.commit()
                db.execute(f"DETACH DATABASE s{i}")
            count = int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
        os.rename(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count
