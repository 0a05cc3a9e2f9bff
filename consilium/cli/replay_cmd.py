"""``consilium replay TRACE|RUN_DIR``: re-run traces with zero model calls and check each is identical.

A folder stands for every ``*.trace.json`` under it (a cohort keeps them in ``arms/<model>/``): one line per
trace, then a count; the exit code is 1 if any trace differs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from consilium.cli.table import SUMMARIES

if TYPE_CHECKING:
    from consilium.api.replays import Replayed

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("replay", help=SUMMARIES["replay"])
    parser.add_argument("trace", type=Path, nargs="+", metavar="TRACE|RUN_DIR",
                        help="trace file(s) (*.trace.json), or run folders: every trace under them")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.replays import ReplayOptions, replay_traces

    done = replay_traces(args.trace, ReplayOptions(on_each=_line))
    if done.folders:
        print(f"{len(done.traces)} traces: {len(done.traces) - done.different} identical, {done.different} different")
    return 1 if done.different else 0


def _line(done: Replayed) -> None:
    if done.difference is not None:
        print(f"{done.path}: different: {done.difference}")
        return
    note = f"; {done.note}" if done.note else ""
    print(f"{done.path}: identical ({done.served} recorded calls served, 0 model calls, {done.seconds:.2f} s{note})")
