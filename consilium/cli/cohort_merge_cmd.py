"""``consilium cohort merge RUN_DIR… --out OUT``: shard folders of one cohort joined into one run folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from consilium.cohort.caches import check_caches, merge_caches
from consilium.cohort.merge import merge_shards
from consilium.errors import UserError

__all__ = ["register", "run"]


def register(cohort: argparse.ArgumentParser) -> None:
    """``merge`` under ``cohort`` (``cohort`` itself runs a cohort when no subcommand is given)."""
    sub = cohort.add_subparsers(dest="cohort_command", metavar="{merge}")
    parser = sub.add_parser("merge", help="join the shard folders of one cohort (cohort --shard I/N) into one")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="the shard folders, all N")
    parser.add_argument("--out", type=Path, required=True, help="the merged run folder (must not exist)")
    parser.add_argument("--caches", nargs="+", type=Path, default=None, metavar="CACHE",
                        help="shard response caches (SQLite) to fold into --cache-out")
    parser.add_argument("--cache-out", type=Path, default=None, metavar="FILE",
                        help="the folded response cache (must not exist); needs --caches")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.caches) != (args.cache_out is not None):
        raise UserError("--cache-out: --caches and --cache-out go together (the shard caches, and the new file)")
    if args.caches:
        check_caches(list(args.caches), args.cache_out)  # before the folder is written
    manifest = merge_shards(list(args.run_dirs), args.out, list(sys.argv))
    print(f"cohort {manifest.run_id}: {len(args.run_dirs)} shards merged, {manifest.counts.get('arms', 0)} arms "
          f"({manifest.counts.get('completed', 0)} completed), {manifest.status}; arms: {args.out / 'arms.csv'}")
    if args.caches:
        count = merge_caches(list(args.caches), args.cache_out)
        print(f"response cache: {count} responses from {len(args.caches)} caches in {args.cache_out}")
    if manifest.status != "completed":
        print(f"consilium: {manifest.error}", file=sys.stderr)
        return 1
    return 0
