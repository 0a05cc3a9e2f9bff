"""Free-form vs structured over a cohort, as ai-consilium.txt reports it, each protocol's arms apart (the
consilium's, the single baseline's), and consilium − single on the same cases: the tables, figures and
``compare.md`` that :func:`acompare` (and ``consilium compare``) writes (docs/cohorts.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.agents.records import FORMATS
from consilium.api.options import as_path, draws, options_of
from consilium.api.sync import off_loop, sync_twin
from consilium.cohort.progress import ItemProgress
from consilium.cohort.tables import write_csv
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.registry import baselines, protocols
from consilium.judges.coverage import coverage_table, coverage_warnings
from consilium.reports.compare import (
    CohortData,
    cost_by_case,
    cost_by_stage,
    cost_table,
    deliberates,
    has_replicates,
    judgement_coverage,
    load_cohort_data,
    paired_differences,
    panel_sizes,
    protocol_differences,
    protocols_of,
    read_arms,
    replicate_case_sd,
    replicate_sd,
    role_categories,
    role_label_mapping,
    table3,
    table4,
    table6,
    table7,
    table8,
    table9,
    table10,
    table11,
    table12,
)
from consilium.reports.consilium.replicates import replicate_note
from consilium.reports.figures import write_figures
from consilium.reports.partial import (
    completeness_of,
    partial_figures,
    partial_lines,
    partial_rows,
    titled,
    write_missing,
)
from consilium.runfolder.layout import JUDGEMENTS_CSV

__all__ = ["CompareOptions", "Compared", "acompare", "baseline_tables", "compare", "coverage_section",
           "markdown_table", "replicate_tables", "tables_of", "with_protocol"]


@dataclass(frozen=True)
class CompareOptions:
    """``consilium compare``'s options: the report folder (default ``RUN_DIR/compare``), and the bootstrap's
    draws and seed."""

    out: Path | None = None
    bootstrap: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", as_path(self.out))
        draws(self.bootstrap)


def _cell(value: Any, digits: int | None = None) -> str:
    if value is None:
        return "–"
    if digits is not None and isinstance(value, float):
        return f"{value:.{digits}f}"
    return " ".join(str(value).split()).replace("|", "\\|")


def markdown_table(rows: list[dict[str, Any]], *, digits: int | None = None) -> str:
    """Rows as a Markdown table; with ``digits``, every float shown with that many decimals (the CSV
    keeps the number)."""
    if not rows:
        return "(no data)\n"
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(r.get(k), digits) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def with_protocol(data: CohortData, rows: list[dict[str, Any]], several: bool) -> list[dict[str, Any]]:
    """A table's rows of one protocol's arms: with a ``protocol`` column first when the folder holds several."""
    return [{"protocol": data.protocol, **r} for r in rows] if several else rows


def coverage_section(*parts: CohortData, title: str = "Judging coverage") -> tuple[list[str], list[dict[str, Any]]]:
    """The "Judging coverage" Markdown section (under ``title``) and its rows, of each protocol's arms (a
    ``protocol`` column when there are several); a warning on stderr per rubric of which nothing was judged
    (it would otherwise just be missing from the score tables)."""
    data = parts[0]
    coverages = [judgement_coverage(part) for part in parts]
    rows = [r for part, coverage in zip(parts, coverages, strict=True)
            for r in with_protocol(part, coverage_table(coverage), len(parts) > 1)]
    source = {"records": "the judgement records beside the traces", JUDGEMENTS_CSV: "judgements.csv (no "
              "judgement record was found)", "none": ""}[data.judgements_from]
    md = [f"## {title}", ""]
    if not rows:
        md += ["Not judged: no judgement record beside the traces of completed arms.", ""]
    else:
        md += [f"Per rubric and component, from {source}: items judged, items not evaluable and the commonest "
               "reasons.", "", markdown_table(rows)]
    if data.unmatched_records:
        md += [f"{len(data.unmatched_records)} judgement record(s) left out: their trace is not a completed arm "
               f"in arms.csv (first: {data.unmatched_records[0]}).", ""]
    for part, coverage in zip(parts, coverages, strict=True):
        for line in coverage_warnings(coverage):
            print(line if len(parts) == 1 else f"{part.protocol} arms: {line}", file=sys.stderr)
    return md, rows


def replicate_tables(data: CohortData, *, bootstrap: int, seed: int) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """The between-replicate tables of a cohort run in replicates (none otherwise; docs/cohorts.md, "Replicates")."""
    if not has_replicates(data):
        return {}
    return {"replicate_sd": (f"Between-replicate SD per model, format and score (sd_mean: mean of the per-case "
                             f"sample SDs; sd_pooled: pooled by degrees of freedom), and the mean of case means "
                             f"with 95% CIs from a case-clustered bootstrap ({bootstrap} draws, seed {seed})",
                             replicate_sd(data, bootstrap=bootstrap, seed=seed)),
            "replicate_sd_cases": ("Replicates per model, format, score and case: mean and sample SD",
                                   replicate_case_sd(data))}


def tables_of(data: CohortData, *, bootstrap: int, seed: int,
              on_table: Callable[[str], None] | None = None) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """File name → (title, rows) of every table compare writes (docs/cohorts.md lists their columns);
    ``on_table`` hears of each as it is made (a progress bar)."""
    tables = {}
    for name, (title, make) in _table_makers(data, bootstrap=bootstrap, seed=seed).items():
        tables[name] = (replicate_note(name, title, data), make())
        if on_table is not None:
            on_table(name)
    tables.update(replicate_tables(data, bootstrap=bootstrap, seed=seed))
    return tables


def _table_makers(data: CohortData, *, bootstrap: int,
                  seed: int) -> dict[str, tuple[str, Callable[[], list[dict[str, Any]]]]]:
    """File name → (title, what makes its rows)."""
    paired = (f"Paired differences, structured − free-form within (model, case), with 95% CIs from a "
              f"case-clustered bootstrap ({bootstrap} draws, seed {seed})")
    return {
        "table3_outcomes": ("Table 3: controller-recorded outcomes by model and format (ai-consilium.txt)",
                            lambda: table3(data)),
        "table4_vote_transitions": ("Table 4: role-level vote transitions among arms continuing to the next "
                                    "round, per model and pooled", lambda: table4(data)),
        "table6_components": ("Table 6: C1–C8 judge scores by component and format, mean ± population SD",
                              lambda: table6(data)),
        "table7_tokens": ("Table 7: mean judge score (conclusion, C1–C8) and tokens per case by model and format",
                          lambda: table7(data)),
        "table8_criteria": ("Table 8 (pooled) and Tables 13–20 (per model): criterion profiles by component and "
                            "format; whole-case criteria in their own rows", lambda: table8(data)),
        "table9_rounds": ("Table 9: final-report C1–C8 scores and case complexity by completed review rounds",
                          lambda: table9(data)),
        "table10_applicability": ("Table 10: C1–C8 criteria applicable to each component, and opportunities",
                                  lambda: table10(data)),
        "table11_coverage": ("Table 11: numeric C1–C8 score coverage by model and component", lambda: table11(data)),
        "table12_criterion_coverage": ("Table 12: numeric score coverage by criterion and component",
                                       lambda: table12(data)),
        "paired_differences": (paired, lambda: paired_differences(data, bootstrap=bootstrap, seed=seed)),
        "fig2_role_categories": ("Fig. 2b/2c: role categories, primary and supporting shares per model",
                                 lambda: role_categories(data)),
        "fig2_panel_sizes": ("Fig. 2b: panels by number of roles", lambda: panel_sizes(data)),
        "role_label_mapping": ("The exact-label → role-category mapping (Fig. 2c)", lambda: role_label_mapping(data)),
        "cost": ("Cost per case by model and format: the panel's (cost_usd_*), the judges' (judge_*) and both "
                 "(total_*), USD at the prices the calls recorded (empty: unknown, a model without prices)",
                 lambda: cost_table(data)),
        "cost_by_stage": ("Cost per case by stage, judging per rubric and judge model", lambda: cost_by_stage(data)),
        "cost_by_case": ("Cost by case: panel, judges and both", lambda: cost_by_case(data)),
    }


def _parts(run_dir: Path) -> list[CohortData]:
    """The folder's arms, one :class:`CohortData` per protocol whose variants are the two formats. The arms of
    another protocol (the board's modes) are left out, with a note on stderr; a folder with none of the
    formats' protocols is refused."""
    names = protocols_of(read_arms(run_dir, check=False))
    known = protocols()
    other = [n for n in names if n not in known or set(known[n].variants) != set(FORMATS)]
    if other and len(other) == len(names):
        raise UserError(f"{run_dir}: a {' and '.join(other)} cohort: compare contrasts the consilium formats; "
                        f"use `consilium report {run_dir}`")
    if other:
        print(f"note: the {' and '.join(other)} arms are left out (compare contrasts the formats); "
              f"`consilium report {run_dir}` reports them", file=sys.stderr)
    return [load_cohort_data(run_dir, protocol=name) for name in names if name not in other]


def baseline_tables(parts: list[CohortData], *, bootstrap: int,
                    seed: int) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """The protocol − baseline table of each protocol whose baseline's arms are in the folder too."""
    by_name = {part.protocol: part for part in parts}
    tables = {}
    for name, baseline in baselines().items():  # as each protocol declares (Protocol.analyses.baseline)
        if name in by_name and baseline in by_name:
            tables[f"{name}_vs_{baseline}"] = (
                replicate_note(f"{name}_vs_{baseline}",
                               f"Paired differences, {name} − {baseline} within (model, format, case), with 95% CIs "
                               f"from a case-clustered bootstrap ({bootstrap} draws, seed {seed}); cases left out, "
                               "and why", by_name[name]),
                protocol_differences(by_name[name], by_name[baseline], bootstrap=bootstrap, seed=seed))
    return tables


@dataclass(frozen=True)
class Compared:
    """What ``compare`` made of a cohort: each table (file name → title, rows; a ``protocol`` column when
    the folder holds several; the title marked partial when the cohort is), the judging coverage rows, and
    the files written (``compare.md``, the CSVs, the figures); ``markdown`` is the report's text;
    ``partial`` says whether the cohort lacks planned arms or did not complete (consilium/reports/partial.py)."""

    tables: dict[str, tuple[str, list[dict[str, Any]]]]
    coverage: list[dict[str, Any]]
    report: Path
    csvs: list[Path]
    figures: list[Path]
    markdown: str
    partial: bool = False


async def acompare(run_dir: str | Path, options: CompareOptions | None = None, **changes: Any) -> Compared:
    """Every table and figure of ``consilium compare RUN_DIR``, written under ``out`` (default
    ``RUN_DIR/compare``) and returned: ``tables`` (file name → title, rows), ``coverage``, ``report``
    (compare.md), ``csvs`` and ``figures``. Run on a worker thread (the bootstrap is CPU work), so a running
    loop keeps serving."""
    chosen = options_of(CompareOptions, options, changes)
    return await off_loop(_compare, Path(run_dir), chosen)


compare = sync_twin(acompare)


def _compare(run_dir: Path, options: CompareOptions) -> Compared:
    out, bootstrap, seed = options.out, options.bootstrap, options.seed
    done = completeness_of(run_dir)  # first: a cohort with no arm yet says so, with its plan
    parts = _parts(run_dir)
    several = len(parts) > 1
    out = out or run_dir / "compare"
    tables: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    drawn = [part for part in parts if deliberates(part.protocol)]
    steps = sum(len(_table_makers(part, bootstrap=bootstrap, seed=seed)) for part in parts)
    with ItemProgress("tables", steps + 1 + len(drawn)) as progress:
        for part in parts:
            def made_one(name: str, protocol: str = part.protocol) -> None:
                progress.advance(f"{protocol} {name}", "made")

            made = tables_of(part, bootstrap=bootstrap, seed=seed, on_table=made_one)
            for name, (title, rows) in made.items():
                tables.setdefault(name, (title, []))[1].extend(with_protocol(part, rows, several))
        baselines = baseline_tables(parts, bootstrap=bootstrap, seed=seed)
        tables.update(baselines)
        progress.advance("baselines", f"{len(baselines)} made")
        # ai-consilium.txt's figures draw a deliberation: of each protocol with review rounds, apart
        figures = []
        for part in drawn:
            with partial_figures(done):  # each image marked as the tables' titles are
                figures += write_figures(part, out / part.protocol if several else out, bootstrap=bootstrap,
                                         seed=seed)
            progress.advance(f"{part.protocol} figures", "drawn")
    tables = {name: (titled(done, title), rows) for name, (title, rows) in tables.items()}
    arms = [a for part in parts for a in part.arms]
    counts = "; ".join(f"{len(p.arms)} {p.protocol}" for p in parts)
    md = [f"# Free-form vs structured: {run_dir.resolve().name}", "", *partial_lines(done),
          f"{len(arms)} arms{f' ({counts})' if several else ''}; "
          f"{sum(a.completed for a in arms)} completed.", ""]
    coverage_md, coverage = coverage_section(*parts, title=titled(done, "Judging coverage"))
    md += coverage_md
    paths = [write_csv(out / "judging_coverage.csv", partial_rows(done, coverage))] if coverage else []
    for name, (title, rows) in tables.items():
        md += [f"## {title}", "", markdown_table(rows, digits=3)]
        if rows:
            paths.append(write_csv(out / f"{name}.csv", partial_rows(done, rows)))
    missing = write_missing(out, done)
    paths += [missing] if missing is not None else []
    md += [f"## {titled(done, 'Figures')}", ""] + [f"![{p.stem}]({p.relative_to(out).as_posix()})" for p in figures]
    report = write_text_atomic(out / "compare.md", "\n".join(md) + "\n")
    return Compared(tables=tables, coverage=coverage, report=report, csvs=paths, figures=figures,
                    markdown="\n".join(md) + "\n", partial=done is not None and done.partial)
