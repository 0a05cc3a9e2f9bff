"""``consilium serve RUN_DIR…``: the web studio (the library's :func:`consilium.api.serving.aserve`): browse
cohorts, run blinded rating studies, answer a run paused for a person (docs/studio-web.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from consilium.cli.table import SUMMARIES

__all__ = ["register", "run"]


def _port(value: str) -> int:
    port = int(value)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0–65535; 0 picks a free one)")
    return port


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("serve", help=SUMMARIES["serve"])
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    parser.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0: a free one)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--database", default=None, metavar="URL",
                        help="the rating studies' database (default: each run folder's study.sqlite3; "
                             "postgresql://… for a multi-site study)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium import aio
    from consilium.api.serving import ServeOptions, aserve

    options = ServeOptions(host=args.host, port=args.port, database=args.database)
    try:
        aio.run(aserve(args.runs, options, say=lambda line: print(line, flush=True)))
    except KeyboardInterrupt:
        print("consilium serve: stopped", file=sys.stderr)
    return 0
