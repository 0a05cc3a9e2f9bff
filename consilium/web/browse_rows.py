"""The browse pages' rows: one per arm of a served folder, from its tables, never from its traces.

A cohort's arms come from ``arms.csv`` (it grows row by row as arms finish, so it is complete at every moment;
:meth:`~consilium.runfolder.folder.RunFolder.arms`). Each arm's judge scores are scored as ``consilium view`` scores
them (:class:`~consilium.reports.view_cohort.RubricScore`: the mean of the per-output items): from the rows of
``judgements.csv`` for a record no newer than that table (one table read, not a record per arm: a 1,000-arm index
stays fast), else from the judgement record beside the trace, read once per file version (keyed by path, size and
modification time; :func:`consilium.reports.view_cohort.rubric_score`); a rubric with its own aggregate (the
four-decision weighted mean) is always read from its records. A folder that is not a cohort (a ``simulate`` run:
traces only) has one row per trace, read from the trace itself (there are few).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from consilium.cohort.completeness import Completeness, cohort_completeness
from consilium.errors import UserError
from consilium.graphs.registry import protocol_of
from consilium.judges.record import read_judgement
from consilium.natural import natural_key
from consilium.reports.view_cohort import RubricScore, rubric_score
from consilium.runfolder import ArmRow, RunFolder
from consilium.runfolder.layout import judged_rubric, judgements_of
from consilium.web.browse_table import ArmKey, Table, plain, table_of

__all__ = ["Arm", "arm_id", "arms_of", "cached_arms", "completeness", "folder_stamp", "rubrics_of", "scores_of"]


def arm_id(case_id: str, model_spec: str, protocol: str, fmt: str, replicate: int | None) -> str:
    """An arm's id in page paths: a short hash of its arms.csv key (stable as the cohort grows or is sorted)."""
    key = "\x1f".join((case_id, model_spec, protocol, fmt, "" if replicate is None else str(replicate)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


@dataclass
class Arm:
    """One arm as the index shows it (its table row's facts), with where its trace is."""

    id: str
    row: ArmRow
    trace: Path | None
    scores: dict[str, RubricScore] = field(default_factory=dict)
    #: Its index row's HTML by (run, rubrics) (browse_index.row_html): made once per read of the folder.
    html: dict[tuple[int, tuple[str, ...]], str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def cells(self) -> dict[str, Any]:
        """Its row's columns (:meth:`ArmRow.cells`), dumped once: the index asks for several."""
        return self.row.cells()

    @property
    def model(self) -> str:
        return self.row.model or self.row.model_spec

    @property
    def completed(self) -> bool:
        return self.row.completed

    @property
    def rounds(self) -> int | None:
        """Review rounds (the consilium's), else a board's turns, else None."""
        for column in ("rounds", "turns"):
            value = self.cells.get(column)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    @property
    def tokens(self) -> int | None:
        """The panel's input plus output tokens as generated."""
        if self.row.input_tokens is None or self.row.output_tokens is None:
            return None
        return self.row.input_tokens + self.row.output_tokens

    def number(self, column: str) -> float | None:
        """A numeric column of its row (``judge_cost_usd``, ``total_cost_usd``, …), None when absent."""
        value = self.cells.get(column)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    def natural(self) -> tuple[object, ...]:
        """The default order: case, model, protocol, format, replicate, each as a person reads it."""
        replicate = "" if self.row.replicate is None else str(self.row.replicate)
        return tuple(natural_key(part) for part in (self.row.case_id, self.model, self.row.protocol,
                                                    self.row.format, replicate))


_lock = threading.Lock()
_cache: dict[Path, tuple[tuple[int, int], tuple[str, RubricScore] | None]] = {}


def _scored(file: Path, trace_name: str) -> tuple[str, RubricScore] | None:
    """One record's rubric and score (None: a record of another trace, or unreadable), read once per version."""
    try:
        stat = file.stat()
    except OSError:
        return None
    version = (stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = _cache.get(file)
    if known is not None and known[0] == version:
        return known[1]
    try:
        judgement = read_judgement(file)
        found = (judgement.rubric, rubric_score(judgement)) if judgement.trace == trace_name else None
    except Exception:
        found = None
    with _lock:
        _cache[file] = (version, found)
    return found


def _beside(trace: Path, listings: dict[Path, list[str]]) -> list[Path]:
    """:func:`~consilium.runfolder.layout.judgements_of`, from its folder's listing (listed once per folder)."""
    if trace.parent not in listings:
        try:
            listings[trace.parent] = sorted(os.listdir(trace.parent))
        except OSError:
            listings[trace.parent] = []
    return [trace.parent / name for name in listings[trace.parent] if judged_rubric(trace, name) is not None]


def scores_of(trace: Path, table: Table | None = None, key: ArmKey | None = None,
              listings: dict[Path, list[str]] | None = None) -> dict[str, RubricScore]:
    """The arm's score per rubric: from ``table`` (judgements.csv's, by arm) where a record is no newer than it,
    else from the judgement records beside its trace (``listings``: folders already listed, by path)."""
    found: dict[str, RubricScore] = {}
    for file in judgements_of(trace) if listings is None else _beside(trace, listings):
        rubric = judged_rubric(trace, file.name) or ""
        if table is not None and key is not None and (rubric, *key) in table.scores and plain(rubric):
            try:
                if file.stat().st_mtime_ns <= table.version:
                    found[rubric] = table.scores[(rubric, *key)]
                    continue
            except OSError:
                continue
        scored = _scored(file, trace.name)
        if scored is not None:
            found[scored[0]] = scored[1]
    return found


def _trace_rows(folder: RunFolder) -> list[Arm]:
    """A folder of traces only: one row per trace, its facts read from the trace."""
    arms = []
    for path in folder.trace_files():
        trace = folder.read_trace(path)
        protocol = protocol_of(trace)
        own = {k: v for k, v in protocol.row(trace).items() if v is not None}
        row = ArmRow.model_validate({
            "case_id": trace.case_id, "model": trace.model, "model_spec": trace.model_spec or trace.model,
            "protocol": protocol.name, "format": protocol.variant(trace), "status": trace.status,
            "error": trace.error or "", "failed_stage": trace.failed_stage or "",
            "input_tokens": trace.usage.total.input_tokens, "output_tokens": trace.usage.total.output_tokens,
            "trace": folder.relative(path), **own})
        arms.append(Arm(arm_id(row.case_id, folder.relative(path), row.protocol, row.format, None), row, path))
    return arms


def arms_of(folder: RunFolder) -> list[Arm]:
    """Every arm of a served folder, in natural order, each with its scores."""
    if folder.is_cohort:
        arms = [Arm(arm_id(r.case_id, r.model_spec, r.protocol, r.format, r.replicate), r,
                    folder.trace_location(r.trace) if r.trace else None) for r in folder.arms()]
    else:
        arms = _trace_rows(folder)
    table = table_of(folder) if folder.is_cohort else None
    listings: dict[Path, list[str]] = {}
    for arm in arms:
        if arm.trace is not None and arm.completed:
            row = arm.row
            arm.scores = scores_of(arm.trace, table, (row.case_id, row.model, row.protocol, row.format, row.replicate),
                                   listings)
    return sorted(arms, key=Arm.natural)


def rubrics_of(arms: list[Arm]) -> list[str]:
    return sorted({rubric for arm in arms for rubric in arm.scores})


Stamp = tuple[tuple[int, int] | None, ...]


def folder_stamp(folder: RunFolder) -> Stamp:
    """The size and modification time of the folder's tables and manifest: what changes as a cohort runs, is
    judged or resumed (a stat each, nothing read)."""
    found: list[tuple[int, int] | None] = []
    for path in (folder.arms_csv, folder.judgements_csv, folder.manifest_path):
        try:
            stat = path.stat()
            found.append((stat.st_size, stat.st_mtime_ns))
        except OSError:
            found.append(None)
    return tuple(found)


_arms_cache: dict[Path, tuple[Stamp, list[Arm]]] = {}


def cached_arms(folder: RunFolder) -> list[Arm]:
    """:func:`arms_of`, read again only when :func:`folder_stamp` changed (a folder of traces only: every time)."""
    stamp = folder_stamp(folder)
    with _lock:
        known = _arms_cache.get(folder.path)
    if known is not None and known[0] == stamp and folder.is_cohort:
        return known[1]
    arms = arms_of(folder)
    with _lock:
        _arms_cache[folder.path] = (stamp, arms)
    return arms


def completeness(folder: RunFolder, arms: list[Arm]) -> Completeness | None:
    """The cohort against its manifest's plan (None: no manifest, or one that cannot be read)."""
    if not folder.is_cohort:
        return None
    try:
        return cohort_completeness(folder.path, [arm.cells for arm in arms])
    except UserError:
        return None
