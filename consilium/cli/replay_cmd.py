"""``consilium replay TRACE``: re-run a trace with zero model calls and check it is identical."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from consilium import aio
from consilium.errors import ReplayDivergenceError
from consilium.protocols.registry import protocol_of, read_trace
from consilium.protocols.replay import first_difference, replay_trace

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("replay", help="re-run a trace from its recorded calls and compare")
    parser.add_argument("trace", type=Path, nargs="+", help="trace file(s) (*.trace.json)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.trace:
        trace = read_trace(path)
        started = time.perf_counter()
        try:
            replayed, model = aio.run(replay_trace(trace))
        except ReplayDivergenceError as exc:
            print(f"{path}: different: {exc}")
            status = 1
            continue
        difference = first_difference(trace, replayed)
        elapsed = time.perf_counter() - started
        if difference is None:
            note = protocol_of(trace).replay_note(trace, replayed)
            note = f"; {note}" if note else ""
            print(f"{path}: identical ({model.served} recorded calls served, 0 model calls, {elapsed:.2f} s{note})")
        else:
            print(f"{path}: different: {difference}")
            status = 1
    return status
