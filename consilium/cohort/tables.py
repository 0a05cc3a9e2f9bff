"""A cohort's tables: CSV files that grow row by row while it runs, the ``arms.jsonl`` log, and a table
written whole.

A table is started with its header (written atomically), then each finished arm or judgement
appends its rows with one ``write`` on a descriptor opened ``O_APPEND`` (never through a symbolic
link), so the file is complete row by row at every moment: a cohort killed mid-way leaves every row
it finished and no torn one. At the end the cohort rewrites the table atomically in its documented
order (consilium/cohort/execute.py).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.redact import redact

__all__ = ["CsvLog", "append_jsonl", "write_csv"]


class CsvLog:
    """``with CsvLog(path, columns) as log: log.append(rows)``: the header now, rows as they come."""

    def __init__(self, path: Path, columns: tuple[str, ...]) -> None:
        self.path = path
        self.columns = columns
        self._fd: int | None = None

    def _encode(self, rows: list[dict[str, Any]], *, header: bool = False) -> str:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(self.columns), extrasaction="ignore")
        if header:
            writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()

    def __enter__(self) -> CsvLog:
        write_text_atomic(self.path, self._encode([], header=True))
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        except OSError as exc:
            raise UserError(f"{self.path}: cannot append ({exc.strerror or exc})") from None
        return self

    def append(self, rows: list[dict[str, Any]]) -> None:
        """The rows, in one write (a short write is finished before anything else is appended)."""
        if self._fd is None or not rows:
            return
        data = redact(self._encode(rows)).encode("utf-8")
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError as exc:
            raise UserError(f"{self.path}: cannot append ({exc.strerror or exc})") from None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """Progress log: one line per finished arm, appended. A symlink in its place is refused, never
    followed (it could point anywhere)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if path.is_symlink():
            raise UserError(f"{path}: is a symbolic link; consilium appends only to a plain file") from None
        raise UserError(f"{path}: cannot append ({exc.strerror or exc})") from None
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(redact(json.dumps(row)) + "\n")


def write_csv(path: Path, rows: list[dict[str, Any]], *, fields: tuple[str, ...] = ()) -> Path:
    """Rows as CSV, atomically; the columns in order of appearance (``fields`` first when given)."""
    columns: list[str] = list(fields) if not rows else []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return write_text_atomic(path, buffer.getvalue())
