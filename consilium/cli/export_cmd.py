"""``consilium export RUN_DIR --to inspect|jsonl|parquet``: a run folder for Inspect AI and data frames."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("export", help="export a run folder as Inspect AI logs or JSONL / Parquet tables",
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
    import sys

    from consilium.export import export_run
    from consilium.reports.partial import partial_note

    written = export_run(args.run_dir, args.to, args.out, force=args.force, inspect_format=args.inspect_format)
    partial = partial_note(args.run_dir)  # stdout lists the files written; the rows are the finished arms'
    if partial is not None:
        print(f"note: {partial}", file=sys.stderr)
    for path in written:
        print(path)
    return 0
