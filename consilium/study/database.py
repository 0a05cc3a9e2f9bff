"""Where a study is stored: a SQLite file (the default, ``RUN_DIR/study.sqlite3``) or a PostgreSQL database
named by URL, behind one small connection type, so every query is written once, in SQL both understand.

Portable SQL: text ids made here (never AUTOINCREMENT or SERIAL), integers for flags, ``DOUBLE PRECISION`` for
scores, ``INSERT … ON CONFLICT … DO UPDATE`` for upserts (SQLite ≥ 3.24 and PostgreSQL ≥ 9.5), and ``?``
placeholders, written as ``%s`` for psycopg. SQLite runs in WAL mode with a busy timeout and takes its write
lock when a writing transaction begins (``BEGIN IMMEDIATE``), so two raters answering at once wait for each
other rather than fail; PostgreSQL's row locks do the same. A URL's password is registered with
:mod:`consilium.redact` as soon as it is read and never appears in a message: :attr:`Database.display`
is the URL with its credentials masked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from consilium.errors import UserError
from consilium.redact import redact, redact_url, register_url_credentials

__all__ = ["BUSY_TIMEOUT_S", "DEFAULT_FILE", "Connection", "Database", "is_database_url"]

#: The study database's file in a run folder when no ``--database`` is given.
DEFAULT_FILE = "study.sqlite3"
#: How long a SQLite writer waits for another's lock before giving up (seconds).
BUSY_TIMEOUT_S = 30.0
_POSTGRES = ("postgresql://", "postgres://")
Dialect = Literal["sqlite", "postgresql"]


def is_database_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://…``) rather than a SQLite file."""
    return text.startswith(_POSTGRES)


class _Cursor(Protocol):
    def execute(self, sql: Any, params: Any = ...) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def fetchone(self) -> Any: ...


class Connection:
    """One open transaction's connection: ``execute`` with ``?`` placeholders, rows as tuples."""

    def __init__(self, cursor: _Cursor, dialect: Dialect) -> None:
        self._cursor = cursor
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Connection:
        self._cursor.execute(sql if self.dialect == "sqlite" else sql.replace("?", "%s"), tuple(params))
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        for row in rows:
            self.execute(sql, row)

    def all(self) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._cursor.fetchall()]

    def one(self) -> tuple[Any, ...] | None:
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)


@dataclass(frozen=True)
class Database:
    """A study database: ``target`` a SQLite file's path or a PostgreSQL URL (kept private; ``display`` is
    what messages show)."""

    dialect: Dialect
    target: str

    @classmethod
    def of(cls, run_dir: Path, database: str | None = None) -> Database:
        """The database ``--database`` names; without one, the run folder's own SQLite file."""
        if database is None or database == "":
            return cls("sqlite", str(Path(run_dir) / DEFAULT_FILE))
        return cls.named(database)

    @classmethod
    def named(cls, database: str) -> Database:
        if is_database_url(database):
            register_url_credentials(database)
            return cls("postgresql", database)
        path = database.removeprefix("sqlite:///") if database.startswith("sqlite:///") else database
        if "://" in path:
            raise UserError(f"--database: {redact_url(database)}: not a PostgreSQL URL (postgresql://…) or a "
                            "SQLite file")
        return cls("sqlite", path)

    @property
    def display(self) -> str:
        """The database as messages name it: a file's path, or the URL without its credentials."""
        return redact_url(self.target) if self.dialect == "postgresql" else self.target

    def __repr__(self) -> str:  # a Database in a traceback or a log shows no password
        return f"Database({self.dialect}, {self.display})"

    @property
    def exists(self) -> bool:
        """Whether a SQLite file is already there (a server database always is)."""
        return self.dialect == "postgresql" or Path(self.target).is_file()

    @contextmanager
    def transaction(self, *, write: bool = False) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back when it raises. ``write``: take
        SQLite's write lock at once (so a read-then-write never fails on an upgrade)."""
        if self.dialect == "sqlite":
            with self._sqlite(write) as conn:
                yield conn
        else:
            with self._postgres() as conn:
                yield conn

    @contextmanager
    def _sqlite(self, write: bool) -> Iterator[Connection]:
        try:
            raw = sqlite3.connect(self.target, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise UserError(f"{self.display}: cannot open the study database ({exc})") from None
        try:
            raw.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            raw.execute("PRAGMA foreign_keys = ON")
            if raw.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                raw.execute("PRAGMA journal_mode = WAL")
            raw.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield Connection(raw.cursor(), "sqlite")
            except BaseException:
                raw.execute("ROLLBACK")
                raise
            raw.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.display}: {exc}") from None
        finally:
            raw.close()

    @contextmanager
    def _postgres(self) -> Iterator[Connection]:
        try:
            import psycopg
        except ImportError:
            raise UserError("--database postgresql://…: psycopg is not installed (pip install "
                            "'consilium[postgres]')") from None
        try:
            raw = psycopg.connect(self.target, connect_timeout=10)
        except psycopg.Error as exc:
            raise UserError(f"{self.display}: cannot connect ({redact(str(exc)).splitlines()[0]})") from None
        try:
            with raw.transaction(), raw.cursor() as cursor:
                yield Connection(cursor, "postgresql")
        except psycopg.Error as exc:
            raise UserError(f"{self.display}: {redact(str(exc)).splitlines()[0]}") from None
        finally:
            raw.close()
