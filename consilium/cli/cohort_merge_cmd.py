"""``consilium cohort merge RUN_DIR… --out OUT``: shard folders of one cohort joined into one run folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
    from consilium.api.folders import MergeOptions, merge_shards
    from consilium.runfolder.folder import RunFolder

    done = merge_shards(list(args.run_dirs), MergeOptions(out=args.out, caches=tuple(args.caches or ()),
                                                          cache_out=args.cache_out))
    manifest = done.manifest
    print(f"cohort {manifest.run_id}: {len(args.run_dirs)} shards merged, {manifest.counts.get('arms', 0)} arms "
          f"({manifest.counts.get('completed', 0)} completed), {manifest.status}; arms: {RunFolder(args.out).arms_csv}")
    if done.responses is not None:
        print(f"response cache: {done.responses} responses from {len(args.caches)} caches in {args.cache_out}")
    if manifest.status != "completed":
        print(f"consilium: {manifest.error}", file=sys.stderr)
        return 1
    return 0
