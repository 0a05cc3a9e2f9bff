"""``consilium report RUN_DIR``: the summary tables and plots of a consilium or board cohort."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.compare_cmd import coverage_section, markdown_table
from consilium.cohort.run import write_csv
from consilium.fileio import write_text_atomic
from consilium.reports.compare import load_cohort_data, scores_table, table3, table7
from consilium.reports.figures import write_figures
from consilium.reports.summary import board_figure, board_table, is_board

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("report", help="summary tables and plots of a cohort (consilium or board)")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default RUN_DIR/report)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    data = load_cohort_data(args.run_dir)
    out = args.out or args.run_dir / "report"
    failed = [a for a in data.arms if a.get("status") != "completed"]
    md = [f"# Cohort report: {args.run_dir.name}", "",
          f"{len(data.arms)} arms, {len(data.arms) - len(failed)} completed, {len(failed)} failed.", ""]
    coverage_md, coverage = coverage_section(data)
    md += coverage_md
    if coverage:
        write_csv(out / "judging_coverage.csv", coverage)
    if is_board(data):
        rows = board_table(data)
        md += ["## Board results by model and mode", "", markdown_table(rows)]
        write_csv(out / "board_summary.csv", rows)
        figures = [board_figure(rows, out)]
    else:
        outcomes, tokens, scores = table3(data), table7(data), scores_table(data)
        md += ["## Outcomes (ai-consilium.txt, Table 3)", "", markdown_table(outcomes),
               "## Tokens per case (Table 7)", "", markdown_table(tokens),
               "## Judge scores (Tables 6, 8)", "", markdown_table(scores)]
        for name, rows in (("outcomes", outcomes), ("tokens", tokens), ("scores", scores)):
            if rows:
                write_csv(out / f"{name}.csv", rows)
        figures = write_figures(data, out)
    if failed:
        md += ["## Failed arms", "", markdown_table([{k: a.get(k) for k in ("case_id", "model_spec", "format",
                                                                            "failed_stage", "error")}
                                                     for a in failed])]
    md += ["## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    report = write_text_atomic(out / "report.md", "\n".join(md) + "\n")
    print("\n".join(md[: md.index("## Figures")]))
    print(f"report: {report}")
    return 0
