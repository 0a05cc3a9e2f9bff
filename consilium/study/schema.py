"""The study database's one schema, versioned: ``migrations/NNNN_*.sql`` in order, each applied once.

A ``schema_version`` table holds the version a database is at (one row per migration applied). Opening a
database applies, in one transaction each, the migrations it lacks (an older database is migrated in place);
a database whose version is newer than this code knows is refused in one line, never written to. Two
processes opening a new database at once are serialised: SQLite by its write lock, PostgreSQL by a
transaction-scoped advisory lock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources

from consilium.errors import UserError
from consilium.study.database import Connection, Database

__all__ = ["Migration", "current_version", "migrate", "migrations"]

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
#: Any number, the same for every study database: the advisory lock migrations hold on PostgreSQL.
_LOCK = 7_202_611


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    def statements(self) -> list[str]:
        """The file's statements (separated by ``;``; comments dropped)."""
        text = "\n".join(line for line in self.sql.splitlines() if not line.lstrip().startswith("--"))
        return [s.strip() for s in text.split(";") if s.strip()]


@cache
def migrations() -> tuple[Migration, ...]:
    """Every migration shipped, in version order (1, 2, … without a gap)."""
    folder = resources.files("consilium.study").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), entry.name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    assert [m.version for m in found] == list(range(1, len(found) + 1)), "migrations must be numbered 1, 2, …"
    return tuple(found)


def _version(conn: Connection) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").one()
    return int(row[0]) if row and row[0] is not None else 0


def current_version(db: Database) -> int:
    """The version ``db`` is at (0: a new database)."""
    with db.transaction(write=True) as conn:
        return _version(conn)


def migrate(db: Database, *, upto: int | None = None) -> int:
    """Bring ``db`` to the latest schema (or to ``upto``) and return its version; refuse a newer database."""
    known = migrations()
    target = known[-1].version if upto is None else upto
    with db.transaction(write=True) as conn:
        if conn.dialect == "postgresql":
            conn.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK,))
        version = _version(conn)
        if version > known[-1].version:
            raise UserError(f"{db.display}: the study database is at schema version {version}, newer than this "
                            f"consilium knows ({known[-1].version}); upgrade consilium to open it (nothing was "
                            "changed)")
        for migration in known:
            if version < migration.version <= target:
                for statement in migration.statements():
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                             (migration.version, migration.name, datetime.now(UTC).isoformat()))
                version = migration.version
    return version
