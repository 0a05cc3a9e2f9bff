"""Run folders for the tools around consilium: Inspect AI eval logs, and flat JSONL / Parquet tables of
arms, calls and judgements for pandas, polars and Hugging Face datasets (docs/export.md).

Needs the ``export`` extra (``pip install 'consilium[export]'``: inspect-ai and pyarrow) for Inspect logs
and Parquet; JSONL needs nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from consilium.export.inspect_log import InspectFormat, export_inspect
from consilium.export.source import OpenedRun, open_run
from consilium.export.tables import TableFormat, export_tables

__all__ = ["EXPORT_TARGETS", "InspectFormat", "OpenedRun", "TableFormat", "export_run", "open_run"]

ExportTarget = Literal["inspect", "jsonl", "parquet"]
EXPORT_TARGETS: tuple[ExportTarget, ...] = ("inspect", "jsonl", "parquet")


def export_run(run_dir: Path, to: ExportTarget, out: Path | None = None, *, force: bool = False,
               inspect_format: InspectFormat = "eval") -> list[Path]:
    """Export a cohort or run folder; ``out`` defaults to ``RUN_DIR/export``. Returns the files written.
    An existing file is never replaced unless ``force``."""
    run = open_run(run_dir)
    where = out if out is not None else run_dir / "export"
    if to == "inspect":
        return export_inspect(run, where, inspect_format, force=force)
    return export_tables(run, where, to, force=force)
