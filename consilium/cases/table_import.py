"""Import a table of cases (JSON, JSONL or CSV) as case files, field by field as a mapping file says.

Each record is converted on its own: a record that fails (a required column empty, JSON text that
does not decode, a value the case model refuses, an id used twice) is reported as one
:class:`RecordProblem` and not written, while the good records are written as case files; a record
that lacks the source of an optional field is written without it and reported as a note. A source
that no record has at all (a misspelt column) stops the import before anything is written, since
every case would silently lack that field. The mapping is in :mod:`consilium.cases.table_mapping`,
the reading of the file's records in :mod:`consilium.cases.table_records`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from consilium.cases.loader import problems_from_validation
from consilium.cases.model import Case
from consilium.cases.table_mapping import TableMapping, TableSource, case_path_takes_text, load_mapping
from consilium.cases.table_records import TableRecord, read_records
from consilium.cases.writing import write_cases
from consilium.datafiles import DataError, DataSyntaxError, parse_json
from consilium.errors import UserError

__all__ = ["RecordProblem", "TableImport", "convert_records", "import_table", "unmapped_fields"]


@dataclass(frozen=True)
class RecordProblem:
    """Why one record was not imported: ``<file>: record N (line L, id X): <field>: <reason>``."""

    file: str
    record: int
    line: int | None
    case_id: str | None
    field: str
    reason: str

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line is not None else []
        where += [f"id {self.case_id}"] if self.case_id else []
        place = f"record {self.record}" + (f" ({', '.join(where)})" if where else "")
        return f"{self.file}: {place}: {self.field or '(record)'}: {self.reason}"


@dataclass
class TableImport:
    """What an import did: the case files written, the records left out (``problems``) and the records
    written without the source of an optional field (``notes``)."""

    written: list[Path] = field(default_factory=list)
    problems: list[RecordProblem] = field(default_factory=list)
    notes: list[RecordProblem] = field(default_factory=list)


#: A source a record does not have (a missing key, as against a present but empty one).
_ABSENT: Any = object()


class _Failed(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def import_table(
    path: str | os.PathLike[str],
    mapping_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    fmt: Literal["json", "yaml"] = "json",
    *,
    force: bool = False,
) -> TableImport:
    """Convert every record of ``path`` by the mapping; write the good ones to ``out_dir`` as ``<id>.<fmt>``.

    Nothing is written when a mapped source is in no record (a :class:`UserError` naming the mapping's line
    and the columns there are), or when ``out_dir`` already holds a case file of one of the ids (unless
    ``force``)."""
    if fmt not in ("json", "yaml"):
        raise UserError(f"unknown case format {fmt!r}; use json or yaml")
    mapping = load_mapping(Path(mapping_path))
    source = Path(path)
    records = read_records(source, mapping)
    unmapped = unmapped_fields(records, mapping)
    if unmapped:
        first, keys = unmapped[0]
        more = f" (and {len(unmapped) - 1} more field{'s' if len(unmapped) > 2 else ''})" if len(unmapped) > 1 else ""
        raise UserError(f"{mapping_path}: {mapping.where(first)}: {mapping.fields[first].describe()} is in no record "
                        f"of {source.name} ({keys}){more}; nothing was written")
    result = TableImport()
    cases, result.problems, result.notes = convert_records(source, records, mapping)
    result.written = write_cases(cases, Path(out_dir), fmt, force=force)
    return result


def convert_records(
    source: Path, records: list[TableRecord], mapping: TableMapping
) -> tuple[list[Case], list[RecordProblem], list[RecordProblem]]:
    """Map each record to a case; a record that fails becomes one problem and no case, and each optional
    field whose source a record lacks one note (the case is made without it)."""
    cases: list[Case] = []
    problems: list[RecordProblem] = []
    notes: list[RecordProblem] = []
    seen: dict[str, int] = {}
    for record in records:
        case_id = _raw_id(record, mapping)
        lacking: list[tuple[str, str]] = []
        try:
            case = _convert(record, mapping, source.name, lacking)
            if case.id in seen:
                raise _Failed("id", f"{case.id!r} is also the id of record {seen[case.id]}")
        except _Failed as exc:
            problems.append(RecordProblem(str(source), record.number, record.line, case_id, exc.field, exc.reason))
            continue
        seen[case.id] = record.number
        cases.append(case)
        notes += [RecordProblem(str(source), record.number, record.line, case_id, path, reason)
                  for path, reason in lacking]
    return cases, problems, notes


def unmapped_fields(records: list[TableRecord], mapping: TableMapping) -> list[tuple[str, str]]:
    """The mapped fields whose source no record has, each with the keys that are there, as
    ``columns: A, B`` (or ``keys under patient: …``, ``'Sections JSON' decodes to keys: …``).

    Only records that are objects count; when none is, each record fails on its own instead."""
    objects = [record.data for record in records if record.error is None and isinstance(record.data, dict)]
    if not objects:
        return []
    found = []
    for path, spec in mapping.fields.items():
        values = [_lookup(data, spec.from_) for data in objects]
        present = [value for value in values if value is not _ABSENT]
        if not present:
            found.append((path, _nearby(objects, spec.from_, "columns")))
        elif spec.select is not None:
            decoded = [_decoded_or_none(value) for value in present if not _blank(value)]
            objects_inside = [value for value in decoded if value is not None]
            if objects_inside and all(_lookup(value, spec.select) is _ABSENT for value in objects_inside):
                found.append((path, f"{spec.from_!r} decodes to " + _nearby(objects_inside, spec.select, "keys")))
    return found


def _decoded_or_none(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return parse_json(value)
    except DataError:
        return None  # its records fail on their own, naming the column


def _lookup(data: Any, path: str) -> Any:
    """``data[path]``; else, for a dotted path, ``data[a][b][c]`` (a list step by its index); else :data:`_ABSENT`.

    The whole name first, so a column named ``Dx.Final`` is still one column."""
    if isinstance(data, dict) and path in data:
        return data[path]
    value = data
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and len(part) < 10 and int(part) < len(value):
            value = value[int(part)]
        else:
            return _ABSENT
    return value


def _nearby(objects: list[Any], path: str, what: str) -> str:
    """The keys there are where ``path`` stops resolving, in every object: ``columns: A, B, C``."""
    parts = path.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:depth])
        inner = [value for value in (_lookup(data, prefix) for data in objects) if isinstance(value, dict)]
        if inner:
            return f"keys under {prefix}: {_key_list(inner)}"
    return f"{what}: {_key_list(objects)}"


def _key_list(objects: list[Any], most: int = 30) -> str:
    keys = list(dict.fromkeys(str(key) for data in objects if isinstance(data, dict) for key in data))
    if not keys:
        return "none"
    shown = ", ".join(keys[:most])
    return shown + (f", … ({len(keys) - most} more)" if len(keys) > most else "")


def _raw_id(record: TableRecord, mapping: TableMapping) -> str | None:
    value = _lookup(record.data, mapping.fields["id"].from_)
    return None if value is _ABSENT or _blank(value) else f"{mapping.fields['id'].prefix}{value}"


def _value(record: TableRecord, path: str, spec: TableSource) -> Any:
    """The value a record gives field ``path``: :data:`_ABSENT` when the record lacks the source."""
    value = _lookup(record.data, spec.from_)
    if value is _ABSENT or _blank(value):
        return value
    if spec.decode == "json":
        value = _decode(path, spec.from_, value)
    if spec.select is not None:
        value = _lookup(value, spec.select)
    return value


def _convert(record: TableRecord, mapping: TableMapping, file_name: str, lacking: list[tuple[str, str]]) -> Case:
    if record.error is not None:
        raise _Failed("", record.error)
    if not isinstance(record.data, dict):
        raise _Failed("", f"a record must be an object of fields, not a {type(record.data).__name__}")
    data: dict[str, Any] = {}
    for path, value in mapping.values.items():
        _put(data, path, value)
    required = {name for name, info in Case.model_fields.items() if info.is_required()}
    for path, spec in mapping.fields.items():
        value = _value(record, path, spec)
        if value is _ABSENT or _blank(value):
            if path in required:
                raise _Failed(path, f"required, but {spec.describe()} is missing or empty in this record")
            if value is _ABSENT:
                lacking.append((path, f"{spec.describe()} is not in this record; written without it"))
            continue
        if isinstance(value, int | float) and not isinstance(value, bool) and case_path_takes_text(path):
            value = str(value)
        if spec.prefix:
            value = f"{spec.prefix}{value}"
        _put(data, path, value)
    metadata = data.setdefault("metadata", {})
    if isinstance(metadata, dict):
        metadata.setdefault("source_file", file_name)
        metadata.setdefault("source_record", record.number)
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        first = problems_from_validation("", exc)[0]
        raise _Failed(first.field, first.reason) from None


def _decode(path: str, column: str, value: Any) -> Any:
    if not isinstance(value, str):
        raise _Failed(path, f"{column!r} should hold JSON text (decode: json), not a {type(value).__name__}")
    try:
        return parse_json(value)
    except DataSyntaxError as exc:
        raise _Failed(path, f"{column!r} is not valid JSON (line {exc.line}, column {exc.column}: {exc.message})"
                      ) from None
    except DataError as exc:
        raise _Failed(path, f"{column!r}: {exc}") from None


def _put(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``data[a][b][c] = value`` for ``a.b.c``, merging with what earlier paths set."""
    *parents, last = path.split(".")
    target = data
    for part in parents:
        inner = target.setdefault(part, {})
        if not isinstance(inner, dict):
            raise _Failed(path, f"{part!r} already holds a single value, so it has no field {last!r}")
        target = inner
    if isinstance(value, dict) and isinstance(target.get(last), dict):
        target[last] = {**value, **target[last]}  # a decoded object under fields set one by one
    else:
        target[last] = value


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())
