"""judgements.csv's items scored per (rubric, arm), for the cohort index (consilium/web/browse_rows.py).

A 1,000-arm cohort's table holds some 16,000 items; typing each as a :class:`~consilium.runfolder.JudgementRow`
took most of the index's first request. The rows are read here as plain cells instead, each cell taken only in the
form consilium writes it (``True``/``False``, an integer, a finite decimal, or empty where a column may be); a
table holding any other cell, or short of a column, is read by the typed reader, which decides as it always has.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from consilium.errors import UserError
from consilium.judges.rubric import load_rubric, rubric_names
from consilium.reports.view_cohort import RubricScore
from consilium.runfolder import JudgementRow, RunFolder

__all__ = ["ArmKey", "Item", "Table", "plain", "table_of"]

ArmKey = tuple[str, str, str, str, int | None]  # case, model, protocol, format, replicate


@dataclass(frozen=True)
class Table:
    """judgements.csv's items scored per (rubric, arm), and the table's modification time (ns)."""

    version: int
    scores: dict[tuple[str, str, str, str, str, int | None], RubricScore]


class Item(NamedTuple):
    """The cells of a judgements.csv row that score an arm, typed as :class:`JudgementRow` types them."""

    rubric: str
    case_id: str
    model: str
    protocol: str
    format: str
    replicate: int | None
    criterion: str
    score: float | None
    not_evaluable: bool
    whole_case: bool | None


def plain(rubric: str) -> bool:
    """Whether a rubric's score is the mean of its items (a shipped rubric without an aggregate of its own)."""
    return rubric in rubric_names() and load_rubric(rubric).scoring != "weighted_decisions"


_REQUIRED = ("case_id", "model", "format", "rubric", "component", "criterion")
_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?(e[-+][0-9]+)?")
_BOOL = {"True": True, "False": False}


class _Unwritten(Exception):
    """A cell not in the form consilium writes it."""


def _int(text: str | None) -> int | None:
    if text is None or (text and not _INT.fullmatch(text)):
        raise _Unwritten
    return int(text) if text else None


def _float(text: str | None) -> float | None:
    if text is None or (text and not _FLOAT.fullmatch(text)):
        raise _Unwritten
    value = float(text) if text else None
    if value is not None and not math.isfinite(value):
        raise _Unwritten
    return value


def _bool(text: str | None, empty: bool) -> bool | None:
    if text == "" and empty:
        return None
    if text not in _BOOL:
        raise _Unwritten
    return _BOOL[text]


def _items(text: str) -> list[Item] | None:
    """The rows as :class:`Item`; None when one is not as consilium writes it (the typed reader decides)."""
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header: Sequence[str] = reader.fieldnames or ()
        if not header or any(column not in header for column in _REQUIRED):
            return None
        items = []
        for row in reader:
            if None in row or None in row.values():  # more cells than columns, or fewer
                return None
            _float(row.get("calibrated_score", ""))
            _int(row.get("jury_judges", ""))
            _int(row.get("jury_not_evaluable", ""))
            items.append(Item(row["rubric"], row["case_id"], row["model"], row.get("protocol", ""), row["format"],
                              _int(row.get("replicate", "")), row["criterion"], _float(row.get("score", "")),
                              bool(_bool(row.get("not_evaluable", "False"), empty=False)),
                              _bool(row.get("whole_case", ""), empty=True)))
        return items
    except (csv.Error, _Unwritten):
        return None


def _rows(folder: RunFolder) -> Sequence[Item | JudgementRow]:
    try:
        text = folder.judgements_csv.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return folder.judgements()  # the typed reader's error, or no table
    found = _items(text)
    return found if found is not None else folder.judgements()


def table_of(folder: RunFolder) -> Table | None:
    """judgements.csv's rows scored per (rubric, arm) as :func:`~consilium.reports.view_cohort.rubric_score`
    scores a record's items (whole-case and not-evaluable items out of the mean); None without the table."""
    try:
        version = folder.judgements_csv.stat().st_mtime_ns
        rows = _rows(folder)
    except (OSError, UserError):
        return None
    items: dict[tuple[str, str, str, str, str, int | None], list[Item | JudgementRow]] = {}
    for row in rows:
        items.setdefault((row.rubric, row.case_id, row.model, row.protocol, row.format, row.replicate), []).append(row)
    scores = {}
    whole_case = {name: {c.id: c.whole_case for c in load_rubric(name).criteria}
                  for name in {key[0] for key in items} if plain(name)}
    for key, group in items.items():
        if key[0] not in whole_case:
            continue
        whole = whole_case[key[0]]  # the table may not say (a cohort's does not): the rubric does
        values = [r.score for r in group if not (r.whole_case if r.whole_case is not None else
                                                 whole.get(r.criterion, False))
                  and not r.not_evaluable and r.score is not None]
        scores[key] = RubricScore(sum(values) / len(values) if values else None, len(values),
                                  sum(r.not_evaluable for r in group), len(group))
    return Table(version, scores)
