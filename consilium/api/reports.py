"""The library's report of a cohort, or of every cohort in a folder: the summary tables (CSV), figures and
``report.md`` that :func:`areport` (and ``consilium report``) writes, returned as :class:`Reported`.

A consilium cohort gets its outcomes, tokens and judge scores (ai-consilium.txt), and so does the
single-specialist baseline (without the deliberation's columns and figures); a board cohort the
OpenTumorBoard board results; a judged cohort, of any protocol, one summary per rubric judged
(OpenTumorBoard, NPCBench, Neural-MedBench); a folder of several cohorts, or an ``arms.csv`` with arms
of several protocols, all of these, each table with ``cohort`` and ``protocol`` columns, and the
consilium − single differences of a cohort holding both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from consilium.api.comparison import baseline_tables, coverage_section, replicate_tables
from consilium.api.options import as_path, draws, options_of
from consilium.api.sync import off_loop, sync_twin
from consilium.cohort.tables import write_csv
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.board.protocol import BOARD
from consilium.reports.compare import deliberates, scores_table, table3, table7
from consilium.reports.consilium.cost import cost_by_case, cost_by_stage, cost_points, cost_table, unknown_cost
from consilium.reports.consilium.replicates import replicate_note
from consilium.reports.figures import write_figures
from consilium.reports.figures.cost import write_cost_figure
from consilium.reports.otb_leaderboard import read_leaderboard
from consilium.reports.papers.otb import ALIGNMENT
from consilium.reports.papers.per_case import known_cases
from consilium.reports.papers.responses import judged_responses
from consilium.reports.partial import (
    MISSING_CSV,
    partial_figures,
    partial_lines,
    partial_rows,
    titled,
    write_missing,
)
from consilium.reports.sources import CohortPart, cohort_parts
from consilium.reports.summary import Table, board_figure, board_tables, judged_tables, markdown

__all__ = ["STYLES", "ReportOptions", "Reported", "areport", "report"]

STYLES = ("consilium", "otb-leaderboard")


@dataclass(frozen=True)
class ReportOptions:
    """``consilium report``'s options: the report folder (default ``RUN_DIR/report``), and the bootstrap's
    draws and seed (the NPCBench score interval, the replicate and consilium − single tables); ``style``
    ``otb-leaderboard`` adds the OpenTumorBoard leaderboard's summary (consilium/reports/otb_leaderboard.py)."""

    out: Path | None = None
    bootstrap: int = 10_000
    seed: int = 0
    style: Literal["consilium", "otb-leaderboard"] = "consilium"

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", as_path(self.out))
        draws(self.bootstrap)
        if self.style not in STYLES:
            raise UserError(f"style: {self.style!r} is not one of {', '.join(STYLES)}")


@dataclass(frozen=True)
class Reported:
    """What ``report`` wrote: ``report.md`` (its text in ``markdown``; ``summary``, the part before the figures,
    is what the command line prints), the CSV tables, the figures, and whether a cohort is partial (lacks
    planned arms or did not complete: consilium/reports/partial.py)."""

    report: Path
    csvs: list[Path]
    figures: list[Path]
    markdown: str
    summary: str
    partial: bool = False
    leaderboard: tuple[Path, ...] = ()  # style otb-leaderboard: summary.json and its tables


async def areport(run_dir: str | Path, options: ReportOptions | None = None, **changes: Any) -> Reported:
    """``consilium report RUN_DIR``: the summary tables (CSV) and figures of a cohort, or of every cohort in a
    folder, written under ``out`` (default ``RUN_DIR/report``). Every cohort is read and checked before
    anything is written. Run on a worker thread (the bootstrap is CPU work)."""
    chosen = options_of(ReportOptions, options, changes)
    return await off_loop(_leaderboard if chosen.style == "otb-leaderboard" else _report, Path(run_dir), chosen)


report = sync_twin(areport)


def _failed(part: CohortPart) -> list[dict[str, Any]]:
    return [{"model": a.get("model") or a.get("model_spec", ""), "model_spec": a.get("model_spec"),
             "format": a.get("format"), "case_id": a.get("case_id"), "failed_stage": a.get("failed_stage"),
             "error": a.get("error")} for a in part.data.arms if not a.completed]


def _part(part: CohortPart, options: ReportOptions) -> tuple[list[str], list[Table], Callable[[Path], list[Path]]]:
    """The Markdown and tables of one (cohort, protocol) part, and how to draw its figures into a folder
    (called only once every part has been read, so a bad input writes nothing)."""
    data, arms = part.data, part.data.arms
    failed = _failed(part)
    md = [f"{len(arms)} arms, {len(arms) - len(failed)} completed, {len(failed)} failed.", ""]
    coverage_md, coverage = coverage_section(data, title=titled(part.done, "Judging coverage"))
    md += coverage_md
    tables = []
    responses = judged_responses(part.folder, data)
    if part.protocol == BOARD.name:
        board = board_tables(part.folder, data, responses)
        tables += board
        covered = {ALIGNMENT}  # its means are columns of board_summary

        def figures(out: Path) -> list[Path]:
            return [board_figure(board[0].rows, out)] if board[0].rows else []
    else:
        tables += [Table("outcomes", "Outcomes (ai-consilium.txt, Table 3)", table3(data)),
                   Table("tokens", "Tokens per case (Table 7)", table7(data)),
                   Table("scores", "Judge scores (Tables 6, 8)", scores_table(data))]
        covered = {"ai-consilium"}

        def figures(out: Path) -> list[Path]:  # ai-consilium.txt's figures draw a deliberation
            return write_figures(data, out) if deliberates(part.protocol) else []
    tables += judged_tables(responses, covered, bootstrap=options.bootstrap, seed=options.seed, arms=data.arms,
                            cases=known_cases(part.folder, data.cases))
    tables += [Table(name, title, rows) for name, (title, rows) in
               replicate_tables(data, bootstrap=options.bootstrap, seed=options.seed).items()]
    costs, stage_costs = cost_table(data), cost_by_stage(data)
    estimated = "; estimated = true: tokens counted with tiktoken, so the dollars are estimates too" \
        if any(row["estimated"] for row in costs) else ""
    tables += [Table("cost", "Cost per case by model and format, the panel's (cost_usd_*), the judges' (judge_*) and "
                     "both (total_*) (USD at the prices the calls recorded; – unknown: a model without prices"
                     f"{estimated})", costs),
               Table("cost_by_stage", f"Cost per case by stage, judging per rubric and judge model (USD{estimated})",
                     stage_costs),
               Table("cost_by_case", f"Cost by case: panel, judges and both (USD{estimated})", cost_by_case(data))]
    if failed:
        tables.append(Table("failed_arms", "Failed arms", failed))
    tables = [Table(t.name, titled(part.done, replicate_note(t.name, t.title, data)), t.rows) for t in tables]
    for table in tables:
        md += [f"## {table.title}", "", markdown(table.rows)]
    if coverage:
        tables.insert(0, Table("judging_coverage", "Judging coverage", coverage))
    def with_cost(out: Path) -> list[Path]:
        return [*figures(out), *write_cost_figure(cost_points(data), out, unknown_cost(data))]

    return md, tables, with_cost


def _baselines(parts: list[CohortPart], options: ReportOptions) -> list[tuple[str, list[Table]]]:
    """Per cohort holding the consilium's arms and the single baseline's: consilium − single (compare's table)."""
    found = []
    for folder in dict.fromkeys(part.name for part in parts):
        mine = [p for p in parts if p.name == folder]
        tables = baseline_tables([p.data for p in mine], bootstrap=options.bootstrap, seed=options.seed)
        if tables:
            found.append((folder, [Table(name, titled(mine[0].done, title), rows)
                                   for name, (title, rows) in tables.items()]))
    return found


def _report(run_dir: Path, options: ReportOptions) -> Reported:
    parts = cohort_parts(run_dir)  # every cohort is read and checked before anything is written
    several = len(parts) > 1
    built = [(part, *_part(part, options)) for part in parts]
    baselines = _baselines(parts, options)
    out = options.out or run_dir / "report"
    md = [f"# Cohort report: {run_dir.resolve().name}", ""]
    cohorts = {part.name: part.done for part in parts}  # each cohort folder against its plan, once
    for name, done in cohorts.items():
        md += [f"## {name}", ""] if several and done is not None and done.partial else []
        md += partial_lines(done, heading="###" if several else "##")
    merged: dict[str, list[dict[str, Any]]] = {}
    figures: list[Path] = []
    for part, part_md, tables, draw in built:
        if several:
            md += [f"# {part.name} ({part.protocol} arms)", ""]
        md += part_md
        for table in tables:
            rows = [{"cohort": part.name, "protocol": part.protocol, **r} for r in table.rows] if several \
                else table.rows
            merged.setdefault(table.name, []).extend(partial_rows(part.done, rows))
        with partial_figures(part.done):  # each image marked as its cohort's tables are
            figures += draw(out / f"{part.name}-{part.protocol}" if several else out)
    for folder, tables in baselines:
        for table in tables:
            md += [f"# {folder}: {table.title}", "", markdown(table.rows)]
            merged.setdefault(table.name, []).extend(partial_rows(cohorts[folder], [{"cohort": folder, **r}
                                                                                    for r in table.rows]))
    paths = [write_csv(out / f"{name}.csv", _partial_first(rows)) for name, rows in merged.items() if rows]
    missing = _write_missing(out, parts, several)
    paths += [missing] if missing is not None else []
    partial = any(done is not None and done.partial for done in cohorts.values())
    figures_title = (titled(parts[0].done, "Figures") if not several
                     else "Figures [partial: see above]" if partial else "Figures")
    md += [f"## {figures_title}", ""] + [f"![{p.stem}]({p.relative_to(out).as_posix()})" for p in figures]
    report = write_text_atomic(out / "report.md", "\n".join(md) + "\n")
    return Reported(report=report, csvs=paths, figures=figures, markdown="\n".join(md) + "\n",
                    summary="\n".join(md[: md.index(f"## {figures_title}")]), partial=partial)


def _leaderboard(run_dir: Path, options: ReportOptions) -> Reported:
    """Style otb-leaderboard: its files beside the default report of RUN_DIR's cohorts (none for a folder of
    Specialist Turns alone); everything, its files' places included, read and checked before anything is written."""
    board = read_leaderboard(run_dir, options.out or run_dir / "report")
    if not board.cohorts:
        paths = board.write()
        return Reported(report=paths[-1], csvs=paths[1:3], figures=[], markdown=board.page, summary=board.page,
                        leaderboard=tuple(paths))
    return replace(_report(run_dir, replace(options, style="consilium")), leaderboard=tuple(board.write()))


def _partial_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A table of several cohorts, some partial: the ``partial`` column first, empty for a complete one's rows."""
    if not any("partial" in row for row in rows):
        return rows
    return [{"partial": row.get("partial", ""), **row} for row in rows]


def _write_missing(out: Path, parts: list[CohortPart], several: bool) -> Path | None:
    """missing_arms.csv: the missing arms of every partial cohort (with a ``cohort`` column when several)."""
    cohorts = {part.name: part.done for part in parts}
    if not several:
        return write_missing(out, next(iter(cohorts.values())))
    rows = [{"cohort": name, **arm.row()} for name, done in cohorts.items() if done is not None
            for arm in done.missing]
    return write_csv(out / MISSING_CSV, rows) if rows else write_missing(out, None)
