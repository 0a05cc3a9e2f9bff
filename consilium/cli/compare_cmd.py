"""``consilium compare RUN_DIR``: free-form vs structured over a cohort, as ai-consilium.txt reports it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from consilium.cli.options import positive_int
from consilium.cohort.run import write_csv
from consilium.fileio import write_text_atomic
from consilium.reports.compare import (
    load_cohort_data,
    paired_differences,
    scores_table,
    table3,
    table4,
    table7,
    table9,
)
from consilium.reports.figures import write_figures

__all__ = ["markdown_table", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("compare", help="compare free-form and structured arms of a cohort")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a cohort folder (with arms.csv)")
    parser.add_argument("--bootstrap", type=positive_int, default=2000, help="bootstrap draws (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default RUN_DIR/compare)")
    parser.set_defaults(func=run)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no data)\n"
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join("–" if r.get(k) is None else str(r.get(k)) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
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
    paths = []
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
