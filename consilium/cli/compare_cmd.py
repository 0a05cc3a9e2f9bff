"""``consilium compare RUN_DIR``: free-form vs structured over a cohort, as ai-consilium.txt reports it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from consilium.cli.options import positive_int
from consilium.cohort.run import write_csv
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.judges.coverage import coverage_table, coverage_warnings
from consilium.reports.compare import (
    CohortData,
    judgement_coverage,
    load_cohort_data,
    paired_differences,
    panel_sizes,
    protocol_of,
    read_arms,
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
from consilium.reports.figures import write_figures

__all__ = ["coverage_section", "markdown_table", "register", "run", "tables_of"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("compare", help="compare free-form and structured arms of a cohort")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a cohort folder (with arms.csv)")
    parser.add_argument("--bootstrap", type=positive_int, default=10_000,
                        help="bootstrap draws (default 10000, as ai-consilium.txt Fig. 3b)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default RUN_DIR/compare)")
    parser.set_defaults(func=run)


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


def coverage_section(data: CohortData) -> tuple[list[str], list[dict[str, Any]]]:
    """The "Judging coverage" Markdown section and its rows; a warning on stderr per rubric of which
    nothing was judged (it would otherwise just be missing from the score tables)."""
    coverage = judgement_coverage(data)
    rows = coverage_table(coverage)
    source = {"records": "the judgement records beside the traces", "judgements.csv": "judgements.csv (no "
              "judgement record was found)", "none": ""}[data.judgements_from]
    md = ["## Judging coverage", ""]
    if not rows:
        md += ["Not judged: no judgement record beside the traces of completed arms.", ""]
    else:
        md += [f"Per rubric and component, from {source}: items judged, items not evaluable and the commonest "
               "reasons.", "", markdown_table(rows)]
    if data.unmatched_records:
        md += [f"{len(data.unmatched_records)} judgement record(s) left out: their trace is not a completed arm "
               f"in arms.csv (first: {data.unmatched_records[0]}).", ""]
    for line in coverage_warnings(coverage):
        print(line, file=sys.stderr)
    return md, rows


def tables_of(data: CohortData, *, bootstrap: int, seed: int) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """File name → (title, rows) of every table compare writes (docs/cohorts.md lists their columns)."""
    paired = (f"Paired differences, structured − free-form within (model, case), with 95% CIs from a "
              f"case-clustered bootstrap ({bootstrap} draws, seed {seed})")
    return {
        "table3_outcomes": ("Table 3: controller-recorded outcomes by model and format (ai-consilium.txt)",
                            table3(data)),
        "table4_vote_transitions": ("Table 4: role-level vote transitions among arms continuing to the next "
                                    "round, per model and pooled", table4(data)),
        "table6_components": ("Table 6: C1–C8 judge scores by component and format, mean ± population SD",
                              table6(data)),
        "table7_tokens": ("Table 7: mean judge score (conclusion, C1–C8) and tokens per case by model and format",
                          table7(data)),
        "table8_criteria": ("Table 8 (pooled) and Tables 13–20 (per model): criterion profiles by component and "
                            "format; whole-case criteria in their own rows", table8(data)),
        "table9_rounds": ("Table 9: final-report C1–C8 scores and case complexity by completed review rounds",
                          table9(data)),
        "table10_applicability": ("Table 10: C1–C8 criteria applicable to each component, and opportunities",
                                  table10(data)),
        "table11_coverage": ("Table 11: numeric C1–C8 score coverage by model and component", table11(data)),
        "table12_criterion_coverage": ("Table 12: numeric score coverage by criterion and component",
                                       table12(data)),
        "paired_differences": (paired, paired_differences(data, bootstrap=bootstrap, seed=seed)),
        "fig2_role_categories": ("Fig. 2b/2c: role categories, primary and supporting shares per model",
                                 role_categories(data)),
        "fig2_panel_sizes": ("Fig. 2b: panels by number of roles", panel_sizes(data)),
        "role_label_mapping": ("The exact-label → role-category mapping (Fig. 2c)", role_label_mapping(data)),
    }


def run(args: argparse.Namespace) -> int:
    if protocol_of(read_arms(args.run_dir, check=False)) == "board":
        raise UserError(f"{args.run_dir}: a board cohort: compare contrasts the consilium formats; "
                        f"use `consilium report {args.run_dir}`")
    data = load_cohort_data(args.run_dir)
    out = args.out or args.run_dir / "compare"
    tables = tables_of(data, bootstrap=args.bootstrap, seed=args.seed)
    md = [f"# Free-form vs structured: {args.run_dir.name}", "",
          f"{len(data.arms)} arms; {sum(a.get('status') == 'completed' for a in data.arms)} completed.", ""]
    coverage_md, coverage = coverage_section(data)
    md += coverage_md
    paths = [write_csv(out / "judging_coverage.csv", coverage)] if coverage else []
    for name, (title, rows) in tables.items():
        md += [f"## {title}", "", markdown_table(rows, digits=3)]
        if rows:
            paths.append(write_csv(out / f"{name}.csv", rows))
    figures = write_figures(data, out, bootstrap=args.bootstrap, seed=args.seed)
    md += ["## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    report = write_text_atomic(out / "compare.md", "\n".join(md) + "\n")
    print("\n".join(md[: md.index("## Figures")]))
    print(f"report: {report}\ntables: {', '.join(p.name for p in paths)}")
    print(f"figures: {', '.join(p.name for p in figures)}")
    return 0
