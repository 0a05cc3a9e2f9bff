"""``consilium report RUN_DIR``: the summary tables and plots of a cohort, or of every cohort in a folder
(the library's :func:`consilium.api.reports.report`, which says what each protocol's cohort gets)."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.options import positive_int
from consilium.cli.table import SUMMARIES

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("report", help=SUMMARIES["report"])
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a cohort folder, or a folder of them")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default RUN_DIR/report)")
    parser.add_argument("--bootstrap", type=positive_int, default=10000,
                        help="bootstrap resamples for the NPCBench score interval (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--style", choices=("consilium", "otb-leaderboard"), default="consilium",
                        help="otb-leaderboard: also summary.json and otb_leaderboard.csv/.md, the OpenTumorBoard "
                             "leaderboard's summary of the board arms and Specialist Turns (default consilium)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.reports import ReportOptions, report

    done = report(args.run_dir, ReportOptions(out=args.out, bootstrap=args.bootstrap, seed=args.seed,
                                              style=args.style))
    print(done.summary)
    print(f"report: {done.report}\ntables: {', '.join(p.name for p in done.csvs)}")
    if done.leaderboard:
        print(f"leaderboard: {', '.join(p.name for p in done.leaderboard)}")
    return 1 if done.partial else 0  # written, but of a cohort that lacks arms or did not complete
