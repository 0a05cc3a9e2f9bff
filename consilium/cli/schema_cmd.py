"""``consilium schema NAME``: print the JSON schema of a file format (trace, case)."""

from __future__ import annotations

import argparse
import json

from pydantic import BaseModel

from consilium.cases import Case
from consilium.protocols.board.trace import BoardTrace, TurnTrace
from consilium.protocols.consilium.trace import Trace

__all__ = ["SCHEMAS", "register", "run"]

SCHEMAS: dict[str, type[BaseModel]] = {"trace": Trace, "board-trace": BoardTrace, "turn-trace": TurnTrace,
                                        "case": Case}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("schema", help="print the JSON schema of a file format")
    parser.add_argument("name", choices=sorted(SCHEMAS), help="which format")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(json.dumps(SCHEMAS[args.name].model_json_schema(), indent=2))
    return 0
