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
    protocol_of,
    read_arms,
    scores_table,
    table3,
    table4,
    table7,
    table9,
)
from consilium.reports.figures import write_figures

__all__ = ["coverage_section", "markdown_table", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("compare", help="compare free-form and structured arms of a cohort")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a cohort folder (with arms.csv)")
    parser.add_argument("--bootstrap", type=positive_int, default=2000, help="bootstrap draws (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default RUN_DIR/compare)")
    parser.set_defaults(func=run)


def _cell(value: Any) -> str:
    return "–" if value is None else " ".join(str(value).split()).replace("|", "\\|")


def markdown_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no data)\n"
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(r.get(k)) for k in keys) + " |" for r in rows]
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


def run(args: argparse.Namespace) -> int:
    if protocol_of(read_arms(args.run_dir, check=False)) == "board":
        raise UserError(f"{args.run_dir}: a board cohort: compare contrasts the consilium formats; "
                        f"use `consilium report {args.run_dir}`")
    data = load_cohort_data(args.run_dir)
    out = args.out or args.run_dir / "compare"
    tables = {
        "table3_outcomes": ("Consilium outcomes by model and format (ai-consilium.txt, Table 3)", table3(data)),
        "table4_vote_transitions": ("Role-level vote transitions between rounds (Table 4)", table4(data)),
        "table6_8_scores": ("Judge scores by format, component and criterion, mean ± SD (Tables 6, 8)",
                            scores_table(data)),
        "table7_tokens": ("Tokens per case by model and format, with the mean judge score (Table 7)", table7(data)),
        "table9_rounds": ("Mean judge score by completed review rounds (Table 9)", table9(data)),
        "paired_differences": (f"Free-form − structured per criterion, case-clustered bootstrap 95% CI "
                               f"({args.bootstrap} draws, seed {args.seed})",
                               paired_differences(data, bootstrap=args.bootstrap, seed=args.seed)),
    }
    md = [f"# Free-form vs structured: {args.run_dir.name}", "",
          f"{len(data.arms)} arms; {sum(a.get('status') == 'completed' for a in data.arms)} completed.", ""]
    coverage_md, coverage = coverage_section(data)
    md += coverage_md
    paths = [write_csv(out / "judging_coverage.csv", coverage)] if coverage else []
    for name, (title, rows) in tables.items():
        md += [f"## {title}", "", markdown_table(rows)]
        if rows:
            paths.append(write_csv(out / f"{name}.csv", rows))
    figures = write_figures(data, out)
    md += ["## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    report = write_text_atomic(out / "compare.md", "\n".join(md) + "\n")
    print("\n".join(md[: md.index("## Figures")]))
    print(f"report: {report}\ntables: {', '.join(p.name for p in paths)}")
    print(f"figures: {', '.join(p.name for p in figures)}")
    return 0
