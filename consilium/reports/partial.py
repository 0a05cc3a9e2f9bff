"""How the reports of a cohort say it is partial (:mod:`consilium.cohort.completeness`): a line at the top
of every output, the missing arms listed, every table's title marked, and every CSV row of a partial cohort
carrying a ``partial`` column first, and every figure marked (consilium/reports/figures/style.py), so a table
or an image copied out of its report still says so (docs/cohorts.md, "Partial cohorts"). The commands that read
a cohort's arms beside compare, report and view (jury, ablate, calibrate, analyze, export, a resume) say so
through the same functions."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from consilium.cohort.completeness import Completeness, cohort_completeness
from consilium.cohort.tables import write_csv
from consilium.errors import UserError
from consilium.reports.consilium.files import read_arms
from consilium.reports.figures.style import marked_figures
from consilium.runfolder.folder import RunFolder

__all__ = ["MISSING_CSV", "MISSING_SHOWN", "completeness_of", "marked_markdown", "partial_figures",
           "partial_line", "partial_lines", "partial_note", "partial_of", "partial_rows", "titled", "write_missing"]

#: The file listing every missing arm, beside a partial cohort's report.
MISSING_CSV = "missing_arms.csv"
#: How many missing arms a report's text lists (all are in :data:`MISSING_CSV`).
MISSING_SHOWN = 50


def completeness_of(run_dir: Path) -> Completeness | None:
    """The cohort folder against its manifest's plan (None: no manifest, so no known plan). A cohort with
    no arm finished yet (killed at once, or just started) is one line saying so, with what its plan holds."""
    try:
        rows = read_arms(run_dir, check=False)
    except UserError:
        folder = RunFolder(run_dir)
        arms_csv = folder.arms_csv
        done = cohort_completeness(run_dir, []) if _header_only(folder) else None
        if done is None:
            raise
        raise UserError(f"{arms_csv}: no arms: {done.summary()}; nothing to report yet") from None
    return cohort_completeness(run_dir, [r.cells() for r in rows])


def _header_only(folder: RunFolder) -> bool:
    """Whether the folder's arms.csv is its header alone (as a cohort starts it)."""
    try:
        return folder.is_cohort and not folder.arms(named=False)
    except UserError:
        return False


def partial_of(run_dir: Path) -> Completeness | None:
    """For the commands that read a run or a cohort folder and check its files themselves (``jury``, ``ablate``,
    ``calibrate``, ``analyze``, ``export``): the cohort folder against its plan when it is partial; None for a
    complete cohort, a folder without a manifest or arms.csv, or one whose arms.csv or manifest the command
    itself will refuse."""
    if not RunFolder(run_dir).is_cohort:
        return None
    try:
        done = completeness_of(run_dir)
    except UserError:
        return None
    return done if done is not None and done.partial else None


def partial_note(run_dir: Path) -> str | None:
    """One line saying a cohort folder is partial (None as :func:`partial_of`)."""
    done = partial_of(run_dir)
    return None if done is None else partial_line(done)


def partial_line(done: Completeness) -> str:
    """``partial cohort: 8 of 40 planned arms finished (status: aborted: why); 32 planned arms missing``."""
    return f"partial cohort: {done.summary()}; {len(done.missing)} planned arms missing"


def partial_figures(done: Completeness | None) -> AbstractContextManager[None]:
    """Every figure saved inside carries the partial cohort's mark (none for a complete one)."""
    return marked_figures(done.mark() if done is not None and done.partial else None)


def marked_markdown(done: Completeness | None, text: str) -> str:
    """A report's markdown written by code of its own (jury, ablate): :func:`partial_lines` after its ``# ``
    title and every ``## `` heading marked as :func:`titled` marks a table's title; unchanged for a complete
    cohort."""
    if done is None or not done.partial:
        return text
    lines = [f"## {done.title(line[3:])}" if line.startswith("## ") else line for line in text.split("\n")]
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    return "\n".join([*lines[: title + 1], "", *partial_lines(done, heading="##"), *lines[title + 1:]])


def titled(done: Completeness | None, title: str) -> str:
    """A table's title, marked ``[partial: 8 of 40 planned arms, cohort aborted]`` for a partial cohort."""
    return title if done is None else done.title(title)


def partial_lines(done: Completeness | None, *, heading: str = "##") -> list[str]:
    """Markdown for the top of a report: what the cohort holds of its plan and the missing arms (the first
    :data:`MISSING_SHOWN`); nothing for a complete cohort."""
    if done is None or not done.partial:
        return []
    lines = [f"**Partial cohort: {done.summary()}.** Every table below is of the finished arms only, and says "
             "so in its title.", ""]
    if done.missing:
        shown = done.missing[:MISSING_SHOWN]
        more = f" (the first {len(shown)}; all in {MISSING_CSV})" if len(shown) < len(done.missing) else ""
        lines += [f"{heading} Missing arms: {len(done.missing)}{more}", "",
                  *(f"- {arm.label()}" for arm in shown), ""]
    return lines


def partial_rows(done: Completeness | None, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A table's CSV rows, each with a ``partial`` column first when the cohort is partial."""
    if done is None or not done.partial:
        return rows
    mark = done.mark().removeprefix("partial: ")
    return [{"partial": mark, **row} for row in rows]


def write_missing(out: Path, done: Completeness | None) -> Path | None:
    """``missing_arms.csv`` in ``out``: every planned arm without a row in arms.csv. None when none is, and
    the file an earlier report of the cohort left there, when it was partial, is removed."""
    if done is None or not done.missing:
        stale = out / MISSING_CSV
        if stale.is_file() and not stale.is_symlink():
            stale.unlink()
        return None
    return write_csv(out / MISSING_CSV, [arm.row() for arm in done.missing])
