"""``consilium replay TRACE|RUN_DIR``: re-run traces with zero model calls and check each is identical.

A folder stands for every ``*.trace.json`` under it (a cohort keeps them in ``arms/<model>/``): one line per
trace, then a count; the exit code is 1 if any trace differs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from consilium import aio
from consilium.errors import ReplayDivergenceError, UserError
from consilium.graphs.registry import protocol_of, read_trace
from consilium.graphs.replay import first_difference, replay_trace
from consilium.runfolder.layout import trace_files

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("replay", help="re-run a trace from its recorded calls and compare")
    parser.add_argument("trace", type=Path, nargs="+", metavar="TRACE|RUN_DIR",
                        help="trace file(s) (*.trace.json), or run folders: every trace under them")
    parser.set_defaults(func=run)


def _traces(paths: list[Path]) -> tuple[list[Path], bool]:
    """The files named, and every ``*.trace.json`` under a folder named, in order; and whether a folder was."""
    files: list[Path] = []
    folders = False
    for path in paths:
        if path.is_dir():
            found = trace_files(path)  # the run's own traces, not a run's nested in it
            if not found:
                raise UserError(f"{path}: no *.trace.json files to replay (searched every subfolder)")
            files += found
            folders = True
        else:
            files.append(path)  # read_trace names a missing or bad file
    return files, folders


def run(args: argparse.Namespace) -> int:
    files, folders = _traces(args.trace)
    differ = 0
    for path in files:
        differ += _replay(path)
    if folders:
        print(f"{len(files)} traces: {len(files) - differ} identical, {differ} different")
    return 1 if differ else 0


def _replay(path: Path) -> int:
    """Replay one trace and print its line; 1 if it differs."""
    trace = read_trace(path)
    started = time.perf_counter()
    try:
        replayed, model = aio.run(replay_trace(trace))
    except ReplayDivergenceError as exc:
        print(f"{path}: different: {exc}")
        return 1
    difference = first_difference(trace, replayed)
    elapsed = time.perf_counter() - started
    if difference is not None:
        print(f"{path}: different: {difference}")
        return 1
    note = protocol_of(trace).replay_note(trace, replayed)
    note = f"; {note}" if note else ""
    print(f"{path}: identical ({model.served} recorded calls served, 0 model calls, {elapsed:.2f} s{note})")
    return 0
