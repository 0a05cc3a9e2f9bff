"""``consilium schema NAME``: print the JSON schema of a file format (a protocol's trace, a case)."""

from __future__ import annotations

import argparse
import json

from consilium.cli.table import SUMMARIES

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("schema", help=SUMMARIES["schema"])
    parser.add_argument("name", help="which format: case, trace (a consilium's) or <protocol>-trace (board-trace, "
                                      "turn-trace, single-trace, a plugin's)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.folders import schema

    print(json.dumps(schema(args.name), indent=2))
    return 0
