"""``export --to jsonl|parquet``: the arms, calls and judgements of a run folder as three flat tables.

Each table is written as the arms are read, one arm at a time (Parquet in row groups of
:data:`BATCH` rows), so memory holds a batch, never the cohort. Every row has every column of its table
(columns.py), in order, with None where there is no value; the Parquet schema is explicit, so a column
of nulls keeps its type. Strings pass through the same secret masking as every file consilium writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal, Protocol

from consilium.export.columns import TABLES, Column
from consilium.export.files import check_targets, export_folder, new_file, require
from consilium.export.rows import arm_row, call_rows, judgement_rows
from consilium.export.source import LoadedArm, OpenedRun
from consilium.redact import redact

__all__ = ["BATCH", "TableFormat", "arrow_schema", "export_tables", "table_paths"]

TableFormat = Literal["jsonl", "parquet"]
BATCH = 50_000

_ROWS: dict[str, Callable[[OpenedRun, LoadedArm], list[dict[str, Any]]]] = {
    "arms": lambda run, loaded: [arm_row(run, loaded)],
    "calls": call_rows,
    "judgements": judgement_rows,
}


def table_paths(out: Path, fmt: TableFormat) -> dict[str, Path]:
    return {name: out / f"{name}.{fmt}" for name in TABLES}


def _complete(row: dict[str, Any], columns: tuple[Column, ...]) -> dict[str, Any]:
    """The row with every column in order; strings masked."""
    unknown = set(row) - {c.name for c in columns}
    if unknown:  # a column must be documented before it is written
        raise ValueError(f"undocumented column(s) {sorted(unknown)}")
    return {c.name: redact(v) if isinstance(v := row.get(c.name), str) else v for c in columns}


def arrow_schema(columns: tuple[Column, ...]) -> Any:
    pa = require("pyarrow", "export --to parquet")
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    return pa.schema([pa.field(c.name, types[c.type], nullable=True) for c in columns])


class _Sink(Protocol):
    def add(self, row: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


class _JsonLines:
    def __init__(self, path: Path) -> None:
        self.handle = path.open("w", encoding="utf-8")

    def add(self, row: dict[str, Any]) -> None:
        self.handle.write(json.dumps(row, ensure_ascii=False) + "\n")

    def close(self) -> None:
        self.handle.close()


class _Parquet:
    def __init__(self, path: Path, columns: tuple[Column, ...]) -> None:
        self.pa = require("pyarrow", "export --to parquet")
        pq = require("pyarrow.parquet", "export --to parquet")
        self.schema = arrow_schema(columns)
        self.writer = pq.ParquetWriter(str(path), self.schema)
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        self.writer.write_table(self.pa.Table.from_pylist(self.rows, schema=self.schema))
        self.rows = []

    def close(self) -> None:
        if self.rows:
            self._flush()
        self.writer.close()  # an empty table still has its schema


def export_tables(run: OpenedRun, out: Path, fmt: TableFormat, *, force: bool = False) -> list[Path]:
    """Write ``arms``, ``calls`` and ``judgements`` under ``out``; returns the files written."""
    if fmt == "parquet":
        require("pyarrow.parquet", "export --to parquet")
    paths = table_paths(out, fmt)
    check_targets(list(paths.values()), force=force, run_dir=run.path)
    with export_folder(out), ExitStack() as stack:
        sinks: dict[str, _Sink] = {}
        for name, path in paths.items():
            tmp = stack.enter_context(new_file(path, force=force))
            sink: _Sink = _JsonLines(tmp) if fmt == "jsonl" else _Parquet(tmp, TABLES[name])
            sinks[name] = sink
            stack.callback(sink.close)  # closed before its file is moved into place (callbacks run LIFO)
        for loaded in run.loaded():
            for name, sink in sinks.items():
                for row in _ROWS[name](run, loaded):
                    sink.add(_complete(row, TABLES[name]))
    return list(paths.values())
