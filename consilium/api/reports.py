"""The library's reports of a cohort: ``compare`` (free-form vs structured, consilium − single) and ``report``
(the summary tables of a cohort or a folder of cohorts), the same files ``consilium compare`` and ``consilium
report`` write, with the tables returned (docs/api.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextvars
from pathlib import Path

from consilium.cli import report_cmd
from consilium.cli.compare_cmd import Compared, write_compare
from consilium.errors import UserError

__all__ = ["Compared", "acompare", "areport", "compare", "report"]


def _draws(bootstrap: int) -> int:
    """``bootstrap`` checked as ``--bootstrap`` is: a whole number of draws, at least 1."""
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
        raise UserError(f"bootstrap: must be a positive whole number of draws, got {bootstrap!r}")
    return bootstrap


def compare(run_dir: str | Path, *, out: str | Path | None = None, bootstrap: int = 10_000,
            seed: int = 0) -> Compared:
    """Every table and figure of ``consilium compare RUN_DIR``, written under ``out`` (default
    ``RUN_DIR/compare``) and returned: ``tables`` (file name → title, rows), ``coverage``, ``report``
    (compare.md), ``csvs`` and ``figures``."""
    return write_compare(Path(run_dir), Path(out) if out is not None else None, bootstrap=_draws(bootstrap),
                         seed=seed)


async def acompare(run_dir: str | Path, *, out: str | Path | None = None, bootstrap: int = 10_000,
                   seed: int = 0) -> Compared:
    """:func:`compare` on a worker thread (the bootstrap is CPU work), so a running loop keeps serving."""
    return await asyncio.to_thread(contextvars.copy_context().run, compare, run_dir, out=out, bootstrap=bootstrap,
                                   seed=seed)


def report(run_dir: str | Path, *, out: str | Path | None = None, bootstrap: int = 10_000, seed: int = 0) -> Path:
    """``consilium report RUN_DIR``: the summary tables (CSV) and figures of a cohort, or of every cohort in a
    folder, written under ``out`` (default ``RUN_DIR/report``); returns the folder's ``report.md``."""
    folder = Path(run_dir)
    where = Path(out) if out is not None else folder / "report"
    report_cmd.run(argparse.Namespace(run_dir=folder, out=where, bootstrap=_draws(bootstrap), seed=seed))
    return where / "report.md"


async def areport(run_dir: str | Path, *, out: str | Path | None = None, bootstrap: int = 10_000,
                  seed: int = 0) -> Path:
    """:func:`report` on a worker thread."""
    return await asyncio.to_thread(contextvars.copy_context().run, report, run_dir, out=out, bootstrap=bootstrap,
                                   seed=seed)
