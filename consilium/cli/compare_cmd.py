"""``consilium compare RUN_DIR``: free-form vs structured over a cohort, as ai-consilium.txt reports it, each
protocol's arms apart (the consilium's, the single baseline's); and consilium − single on the same cases
(the library's :func:`consilium.api.comparison.compare`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.options import positive_int
from consilium.cli.table import SUMMARIES

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("compare", help=SUMMARIES["compare"])
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a cohort folder (with arms.csv)")
    parser.add_argument("--bootstrap", type=positive_int, default=10_000,
                        help="bootstrap draws (default 10000, as ai-consilium.txt Fig. 3b)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default RUN_DIR/compare)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.comparison import CompareOptions, compare

    done = compare(args.run_dir, CompareOptions(out=args.out, bootstrap=args.bootstrap, seed=args.seed))
    print(done.markdown[: done.markdown.index("\n## Figures") + 1].removesuffix("\n"))
    print(f"report: {done.report}\ntables: {', '.join(p.name for p in done.csvs)}")
    print(f"figures: {', '.join(p.name for p in done.figures)}")
    return 1 if done.partial else 0  # written, but of a cohort that lacks arms or did not complete
