"""``consilium export RUN_DIR --to inspect|jsonl|parquet``: a run folder for Inspect AI and data frames."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from consilium.cli.table import SUMMARIES

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("export", help=SUMMARIES["export"],
                            description="Export a cohort (or simulate) run folder: --to inspect writes one "
                                        "Inspect AI eval log per protocol, model and format; --to jsonl|parquet "
                                        "writes the tables arms, calls and judgements (docs/export.md).")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("--to", required=True, choices=("inspect", "jsonl", "parquet"), help="what to write")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUN_DIR/export)")
    parser.add_argument("--inspect-format", choices=("eval", "json"), default="eval",
                        help="Inspect log file format (default: eval)")
    parser.add_argument("--force", action="store_true", help="replace export files that exist (default: refuse)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.folders import ExportOptions, export

    done = export(args.run_dir, ExportOptions(to=args.to, out=args.out, inspect_format=args.inspect_format,
                                              force=args.force))
    if done.partial_note is not None:  # stdout lists the files written; the rows are the finished arms'
        print(f"note: {done.partial_note}", file=sys.stderr)
    for path in done.files:
        print(path)
    return 0
