"""The rows of a run folder's tables, typed: one :class:`ArmRow` per line of ``arms.csv`` / ``arms.jsonl``,
one :class:`JudgementRow` per line of ``judgements.csv``.

A CSV cell is text; it is read into its type here, once (an empty cell is None, ``True`` a bool, a
count an int), and written back from it, so no reader compares a cell with ``"True"``. A column the
model does not name (a protocol's own, such as ``rounds`` or ``turns``; the judges' spend columns) is
kept, read as a number, a bool or text by :func:`cell`.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from consilium.errors import UserError

__all__ = ["ArmRow", "JudgementRow", "Row", "cell", "read_rows", "rows_csv", "text_of"]


def cell(text: Any) -> Any:
    """A CSV cell as the value it was written from: "" → None, ``True``/``False`` → bool, an integer,
    a finite or infinite float, else the text itself. A value that is not text is returned as it is."""
    if not isinstance(text, str):
        return text
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def text_of(value: Any) -> str:
    """A value as its CSV cell (the inverse of :func:`cell`): None → "", a bool as ``True``/``False``."""
    return "" if value is None else str(value)


class Row(BaseModel):
    """A table's row: its named columns typed, any other kept (a protocol's, a judge's) by :func:`cell`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _cells(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        named = cls.model_fields
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in named:  # a named column: "" is None where None is allowed, else pydantic's own reading
                out[key] = None if value == "" and not _text(named[key].annotation) else value
            else:
                out[key] = cell(value)
        return out

    def cells(self) -> dict[str, Any]:
        """The row's columns as read or given (named ones in the model's order, then the others), as values."""
        return self.model_dump(exclude_unset=True)

    def __getitem__(self, column: str) -> Any:
        """A column's value as :meth:`cells` holds it; KeyError for a column the row was not given."""
        if column in type(self).model_fields:
            if column not in self.model_fields_set:
                raise KeyError(column)
            return getattr(self, column)
        return (self.__pydantic_extra__ or {})[column]

    def get(self, column: str, default: Any = None) -> Any:
        """A column's value, ``default`` when the row lacks it or it is None (an empty cell)."""
        try:
            value = self[column]
        except KeyError:
            return default
        return default if value is None else value


def _text(annotation: Any) -> bool:
    return annotation is str


class ArmRow(Row):
    """One arm of a cohort: a line of ``arms.csv`` (consilium/cohort/rows.py writes it) or of ``arms.jsonl``."""

    case_id: str
    model_spec: str = ""
    model: str = ""  # "" for an arm that failed before its trace was made
    protocol: str = ""  # "" in a folder written before arms.csv had the column (RunFolder fills it in)
    format: str
    replicate: int | None = None  # its index in a cohort run in replicates
    seed: int | None = None
    status: str
    stop_reason: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    calls: int | None = None
    cached_tokens: int | None = None
    cache_hits: int | None = None
    spent_input_tokens: int | None = None
    spent_output_tokens: int | None = None
    spent_cached_tokens: int | None = None
    spent_calls: int | None = None
    cost_usd: float | None = None  # None: unknown (a model without prices)
    spent_cost_usd: float | None = None
    cost_estimated: bool | None = None
    wall_s: float | None = None
    failed_stage: str = ""
    error: str = ""
    trace: str = ""  # relative to the run folder; "" for an arm that failed before writing one
    resumed: bool = False

    @property
    def completed(self) -> bool:
        return self.status == "completed"


class JudgementRow(Row):
    """One judge item of one arm: a line of ``judgements.csv`` (consilium/cohort/finish.py writes it),
    or an item of a judgement record beside its trace."""

    case_id: str
    model: str
    protocol: str = ""
    format: str
    replicate: int | None = None
    rubric: str
    component: str
    criterion: str
    score: float | None = None  # None: not evaluable
    calibrated_score: float | None = None
    not_evaluable: bool = False
    reason: str = ""
    whole_case: bool | None = None  # None: not recorded (the rubric says)
    judgement: str = ""  # the record's file, relative to the run folder
    jury_judges: int | None = None
    jury_not_evaluable: int | None = None

    @model_validator(mode="after")
    def _finite(self) -> JudgementRow:
        for name in ("score", "calibrated_score"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name}: {value!r} is not a finite number")
        return self


R = TypeVar("R", bound=Row)


def read_rows(path: Path, kind: type[R], *, text: str | None = None) -> list[R]:
    """The rows of a CSV table as ``kind``; a file that is not readable, not CSV, short of a column the
    rows need or with a cell of the wrong kind is one :class:`UserError` naming the file and line."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: not readable ({exc})") from None
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        raw = list(reader)
    except csv.Error as exc:
        raise UserError(f"{path}: not valid CSV ({exc})") from None
    rows = []
    for line, data in enumerate(raw, 2):
        if None in data:  # more cells than the header names
            raise UserError(f"{path}: line {line}: more cells than columns")
        try:
            rows.append(kind.model_validate(data))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "row"
            raise UserError(f"{path}: line {line}: {where}: {error['msg']}") from None
    return rows


def rows_csv(rows: list[R] | list[dict[str, Any]], columns: tuple[str, ...] = ()) -> str:
    """Rows as CSV text: ``columns`` first, then any other in order of appearance."""
    dicts = [r.cells() if isinstance(r, Row) else r for r in rows]
    names = list(columns)
    for row in dicts:
        names += [k for k in row if k not in names]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=names, extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({k: text_of(v) for k, v in row.items()} for row in dicts)
    return buffer.getvalue()
