"""``consilium view RUN_DIR|TRACE``: static HTML to read a run (the library's :func:`consilium.api.folders.view`):
for a cohort folder (one with arms.csv) an index, a page per case and a page per arm in ``RUN_DIR/view/``;
otherwise one self-contained file. The pages of a partial cohort (arms missing from its plan, or not completed)
are written and the exit status is 1."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.table import SUMMARIES

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("view", help=SUMMARIES["view"])
    parser.add_argument("path", type=Path, metavar="RUN_DIR|TRACE")
    parser.add_argument("--out", type=Path, default=None,
                        help="HTML file (default: view.html in the run folder, <trace>.view.html for a trace); for "
                             "a cohort folder, the folder of its pages (default: RUN_DIR/view/)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.folders import ViewOptions, view

    done = view(args.path, ViewOptions(out=args.out))
    if done.partial:  # the index page says so too, and lists the missing arms
        print(f"partial cohort: {done.done.summary()}; {len(done.done.missing)} planned arms missing (listed on "
              "the index)")
    print(done.page)
    return 1 if done.partial else 0
