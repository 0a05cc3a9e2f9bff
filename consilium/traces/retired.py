"""Modes older runs used that this version no longer runs: their records read, with the mode they ran (the upgrade
on read records it, consilium/traces/versions.py); a run config refuses the mode and replay refuses the record,
each in one line. The modes are data here, so nothing else asks which version a record was."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["RETIRED", "RETIRED_SETTINGS", "ReadRecord", "Retired", "replay_refusal", "retired_setting"]


@dataclass(frozen=True)
class Retired:
    """A mode older runs used and this version no longer runs: a record holding ``value`` at ``field`` (a
    dotted path in the record) reads, with the mode it ran, but does not replay."""

    field: str
    value: str
    what: str


#: Every retired mode. A run config refuses these values (:func:`retired_setting`); a trace's record reads them.
RETIRED: tuple[Retired, ...] = (
    Retired("config.lengths", "legacy", "the unequal length caps of consilium answers before the shared budget"),
    Retired("config.discussion", "alternating", "the board's strict moderator-specialist alternation"),
    Retired("config.floor_schema", "flat", "the board's open floor asked under one flat answer object"),
    Retired("validation.rules", "1", "the board's first format checks"),
)


class ReadRecord(Protocol):
    """A record as the reader made it (traces/schema.py TraceBase): it knows where it was read from."""

    @property
    def origin(self) -> tuple[str, str]: ...


def _at(record: Any, path: str) -> Any:
    for name in path.split("."):
        record = record.get(name) if isinstance(record, dict) else getattr(record, name, None)
    return record


#: The run settings that have a retired value.
RETIRED_SETTINGS: tuple[str, ...] = tuple(m.field.removeprefix("config.") for m in RETIRED
                                          if m.field.startswith("config."))


def retired_setting(key: str, value: Any) -> str | None:
    """Why setting ``key`` to ``value`` cannot run, if it is a retired mode; else None."""
    for mode in RETIRED:
        if mode.field == f"config.{key}" and value == mode.value:
            return f"{value!r} ({mode.what}) is no longer run; older traces made with it still read"
    return None


def replay_refusal(trace: ReadRecord) -> str | None:
    """The one line refusing to replay ``trace`` when it ran a retired mode, naming its file and the schema
    version that file was written as; None when it replays."""
    needs = [f"{mode.field.removeprefix('config.')}: {mode.value}" for mode in RETIRED
             if _at(trace, mode.field) == mode.value]
    if not needs:
        return None
    where, version = trace.origin
    return (f"replay: {where} was made with consilium trace schema {version} and {' and '.join(needs)}, which this "
            f"version no longer replays; read it with view, report, judge, compare or export, which still work")
