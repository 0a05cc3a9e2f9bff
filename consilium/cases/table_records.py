"""Read the records of a table of cases (JSON, JSONL or CSV) in order, each with its number and line.

Reading is apart from converting (:mod:`consilium.cases.table_import`): a file that cannot be read at all
is one :class:`UserError`, while a record that is malformed on its own (a JSONL line that does not parse, a
CSV row with more cells than columns) is kept as a :class:`TableRecord` carrying its error, so the import
reports it as that record's problem and goes on with the others.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.cases.table_mapping import TableFormat, TableMapping
from consilium.datafiles import DataError, DataSyntaxError, parse_json
from consilium.datafiles.text import read_text, unpacked_suffix
from consilium.errors import UserError

__all__ = ["TableRecord", "read_records"]

_SUFFIX_FORMATS: dict[str, TableFormat] = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


@dataclass(frozen=True)
class TableRecord:
    """One record as read: its 1-based number, its line where the format has lines, and its fields."""

    number: int
    line: int | None
    data: Any  # a dict when well formed; anything else is reported
    error: str | None = None  # why the record is malformed on its own (a JSONL line, a CSV row)


def read_records(source: Path, mapping: TableMapping) -> list[TableRecord]:
    """The records of a data file in order; a file that cannot be read at all is a :class:`UserError`."""
    suffix = unpacked_suffix(source)
    fmt = mapping.format or _SUFFIX_FORMATS.get(suffix.lower())
    if fmt is None:
        raise UserError(f"{source}: cannot tell the table format from {suffix or '(no extension)'!r}; "
                        "use .json, .jsonl or .csv, or set format in the mapping")
    if mapping.records is not None and fmt != "json":
        raise UserError(f"{source}: the mapping's records key applies to JSON files; this is read as {fmt}")
    try:
        text = read_text(source).removeprefix("\ufeff")
    except FileNotFoundError:
        raise UserError(f"{source}: no such file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UserError(f"{source}: cannot read the table ({exc.strerror or exc})") from None
    records = {"json": _json_records, "jsonl": _jsonl_records, "csv": _csv_records}[fmt](source, text, mapping)
    if not records:
        raise UserError(f"{source}: no records found")
    return records


def _json_records(source: Path, text: str, mapping: TableMapping) -> list[TableRecord]:
    try:
        data = parse_json(text)
    except DataSyntaxError as exc:
        raise UserError(f"{source}: not valid JSON (line {exc.line}, column {exc.column}: {exc.message})") from None
    except DataError as exc:
        raise UserError(f"{source}: {exc}") from None
    where = "the top level"
    if mapping.records is not None:
        for key in mapping.records.split("."):
            if not isinstance(data, dict) or key not in data:
                raise UserError(f"{source}: {mapping.records}: no such key (the mapping's records)")
            data = data[key]
        where = mapping.records
    if not isinstance(data, list):
        hint = "; name the key of the list as records in the mapping" if mapping.records is None else ""
        raise UserError(f"{source}: {where} must be a list of records, not a {type(data).__name__}{hint}")
    return [TableRecord(number, None, item) for number, item in enumerate(data, start=1)]


def _jsonl_records(source: Path, text: str, mapping: TableMapping) -> list[TableRecord]:
    records: list[TableRecord] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        number = len(records) + 1
        try:
            records.append(TableRecord(number, line, parse_json(raw)))
        except DataSyntaxError as exc:
            records.append(TableRecord(number, line, None, f"not valid JSON (column {exc.column}: {exc.message})"))
        except DataError as exc:
            records.append(TableRecord(number, line, None, str(exc)))
    return records


def _csv_records(source: Path, text: str, mapping: TableMapping) -> list[TableRecord]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: Iterator[list[str]] = iter(reader)
    try:
        header = next(rows, None)
        if header is None:
            return []
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            raise UserError(f"{source}: line 1: column {repeated[0]!r} appears more than once in the header")
        records: list[TableRecord] = []
        for row in rows:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            number = len(records) + 1
            if len(row) > len(header):
                records.append(TableRecord(number, line, None, f"{len(row)} cells but {len(header)} columns"))
                continue
            records.append(TableRecord(number, line, dict(zip(header, row, strict=False))))
    except csv.Error as exc:
        raise UserError(f"{source}: line {reader.line_num}: not valid CSV ({exc})") from None
    return records
