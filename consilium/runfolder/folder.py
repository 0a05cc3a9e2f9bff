"""A run folder, opened: its arms, traces, judgement records, tables and manifest, read and written here.

Every command that reads a run (report, compare, export, view, analyze, ablate, jury, calibrate, merge)
opens it with :meth:`RunFolder.open` and reads through it; its layout and file names are
:mod:`consilium.runfolder.layout`'s. Tables are read into typed rows (:mod:`.rows`); writes are atomic
(:func:`consilium.fileio.write_text_atomic`) and replace only a file of the kind written (:mod:`.owned`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.arms import arm_protocol
from consilium.graphs.registry import read_trace
from consilium.judges.record import Judgement, read_judgement
from consilium.runfolder import frames, layout, records
from consilium.runfolder.owned import Kind, check_ours
from consilium.runfolder.rows import ArmRow, JudgementRow, R, read_rows, rows_csv
from consilium.spec.manifest import CohortManifest, read_manifest
from consilium.traces.schema import TraceBase

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunFolder"]


@dataclass(frozen=True)
class RunFolder:
    """``RunFolder.open(path)``: one run's folder (a cohort's, a single run's, an ablation's)."""

    path: Path

    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        folder = Path(path)
        if not folder.is_dir():
            raise UserError(f"{folder}: no such run folder")
        return cls(folder)

    # Where its files are.
    @property
    def manifest_path(self) -> Path:
        return self.path / layout.MANIFEST

    @property
    def arms_csv(self) -> Path:
        return self.path / layout.ARMS_CSV

    @property
    def arms_jsonl(self) -> Path:
        return self.path / layout.ARMS_JSONL

    @property
    def judgements_csv(self) -> Path:
        return self.path / layout.JUDGEMENTS_CSV

    @property
    def is_cohort(self) -> bool:
        """Whether it is a cohort's folder (one with ``arms.csv``)."""
        return self.arms_csv.is_file()

    @property
    def has_manifest(self) -> bool:
        return self.manifest_path.is_file()

    def relative(self, path: Path) -> str:
        """A path as the folder's tables store it: relative to the folder (so a moved folder still reads)."""
        try:
            return path.resolve().relative_to(self.path.resolve()).as_posix()
        except ValueError:
            return str(path)

    def trace_files(self) -> list[Path]:
        """The run's own traces, not those of a run nested in it (:func:`.layout.trace_files`)."""
        return layout.trace_files(self.path)

    def judgement_files(self, rubric: str | None = None) -> list[Path]:
        """The run's own judgement records (of ``rubric``; of every rubric when None)."""
        return layout.judgement_files(self.path, rubric)

    def trace_location(self, recorded: str) -> Path:
        """Where a trace named in arms.csv is: relative to the run folder (as cohorts write it), absolute,
        or relative to where an older cohort ran (then found under the folder's ``arms/`` if it has moved)."""
        path = Path(recorded)
        candidates = [] if path.is_absolute() else [self.path / path]
        if "arms" in path.parts:
            parts = path.parts
            candidates.append(self.path.joinpath(*parts[len(parts) - 1 - parts[::-1].index("arms"):]))
        candidates.append(path)
        return next((c for c in candidates if c.is_file()), candidates[0])

    # Tables.
    def arms(self, *, named: bool = True) -> list[ArmRow]:
        """The rows of ``arms.csv``, typed. ``named``: each row's ``protocol`` filled in for a folder written
        before that column (:func:`~consilium.graphs.arms.arm_protocol`), and the ``model`` of an arm that
        failed before its trace was made taken from its spec's other arms (else the spec itself)."""
        if not self.is_cohort:
            raise UserError(f"{self.path}: no {layout.ARMS_CSV} (run `consilium cohort` first)")
        rows = read_rows(self.arms_csv, ArmRow)
        if not named:
            return rows
        ids = {r.model_spec: r.model for r in rows if r.model and r.model_spec}
        return [r.model_copy(update={"protocol": arm_protocol(r.cells()) if not r.protocol else r.protocol,
                                     "model": r.model or ids.get(r.model_spec, r.model_spec)}) for r in rows]

    def arm_log(self) -> list[ArmRow]:
        """The lines of ``arms.jsonl`` (each finished arm's, in the order they finished), typed; a torn last
        line (a cohort killed mid-write) is passed over."""
        try:
            lines = self.arms_jsonl.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        rows = []
        for line in lines:
            try:
                rows.append(ArmRow.model_validate(json.loads(line)))
            except ValueError:
                continue
        return rows

    def judgements(self) -> list[JudgementRow]:
        """The rows of ``judgements.csv``, typed (empty when the folder has none)."""
        return read_rows(self.judgements_csv, JudgementRow) if self.judgements_csv.is_file() else []

    def write_arms(self, rows: list[ArmRow] | list[dict[str, Any]], columns: tuple[str, ...] = ()) -> Path:
        """``arms.csv``, whole and atomically (``columns`` first, then any other in order of appearance)."""
        return self._write(self.arms_csv, rows_csv(rows, columns), "table")

    def write_judgements(self, rows: list[JudgementRow] | list[dict[str, Any]],
                         columns: tuple[str, ...] = ()) -> Path:
        """``judgements.csv``, whole and atomically."""
        return self._write(self.judgements_csv, rows_csv(rows, columns), "table")

    def read_table(self, path: Path, kind: type[R]) -> list[R]:
        """Another table of the folder's kind of rows (a shard's arms.csv, a copy), typed."""
        return read_rows(path, kind)

    # Records.
    def read_trace(self, path: Path) -> TraceBase:
        return read_trace(path)

    def write_trace(self, path: Path, trace: TraceBase) -> Path:
        return self._write(path, trace.model_dump_json(indent=2) + "\n", "trace")

    def judgement_path(self, trace: Path, rubric: str) -> Path:
        return layout.judgement_path(trace, rubric)

    def write_judgement(self, trace: Path, judgement: Judgement) -> Path:
        """The judgement of ``trace`` beside it (``<stem>.judge.<rubric>.json``)."""
        return self._write(layout.judgement_path(trace, judgement.rubric),
                           judgement.model_dump_json(indent=2) + "\n", "judgement")

    def judgements_of(self, trace: Path) -> list[tuple[Path, Judgement]]:
        """The judgement records beside ``trace`` that name it, by rubric."""
        found = []
        for file in layout.judgements_of(trace):
            judgement = read_judgement(file)
            if judgement.trace == trace.name:  # a record names the trace it scored
                found.append((file, judgement))
        return found

    def manifest(self) -> CohortManifest:
        """A cohort's manifest, typed and upgraded from an older version (consilium/spec/manifest.py)."""
        return read_manifest(self.path)

    def manifest_data(self) -> dict[str, Any]:
        """The manifest as plain JSON (a cohort's typed model: :func:`consilium.spec.manifest.read_manifest`)."""
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise UserError(f"{self.manifest_path}: not a readable manifest ({exc})") from None
        if not isinstance(data, dict):
            raise UserError(f"{self.manifest_path}: not a manifest (a JSON object)")
        return data

    def _write(self, path: Path, text: str, kind: Kind) -> Path:
        check_ours(path, kind)
        return write_text_atomic(path, text)

    # Rows of its records, and frames (pandas is imported when a frame is made: the CLI starts without it).
    def arms_frame(self) -> pd.DataFrame:
        return frames.arms_frame(self)

    def calls_frame(self) -> pd.DataFrame:
        return frames.calls_frame(self)

    def judgements_frame(self) -> pd.DataFrame:
        return frames.judgements_frame(self)

    def call_rows(self) -> list[dict[str, Any]]:
        """Every model call of the folder's arms, the panel's and the judges' (:func:`.records.call_rows`)."""
        return records.call_rows(self)

    def judgement_rows(self) -> list[JudgementRow]:
        """Every judge item of the folder's completed arms, from the records beside their traces (the
        source of truth: a judging after the cohort counts), else from ``judgements.csv``."""
        return records.judgement_rows(self)
