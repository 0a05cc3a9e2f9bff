"""``consilium schema NAME``: print the JSON schema of a file format (a protocol's trace, a case)."""

from __future__ import annotations

import argparse
import json

from pydantic import BaseModel

from consilium.cases import Case
from consilium.errors import UserError
from consilium.graphs.registry import protocols

__all__ = ["register", "run", "schemas"]


def schemas() -> dict[str, type[BaseModel]]:
    """``trace`` (the consilium's), ``<protocol>-trace`` for every other protocol, and ``case``."""
    found: dict[str, type[BaseModel]] = {
        "trace" if name == "consilium" else f"{name}-trace": p.trace_model for name, p in protocols().items()}
    return {**found, "case": Case}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("schema", help="print the JSON schema of a file format")
    parser.add_argument("name", help="which format: case, trace (a consilium's) or <protocol>-trace (board-trace, "
                                      "turn-trace, single-trace, a plugin's)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    known = schemas()
    if args.name not in known:
        raise UserError(f"name: unknown format {args.name!r} (known: {', '.join(sorted(known))})")
    print(json.dumps(known[args.name].model_json_schema(), indent=2))
    return 0
