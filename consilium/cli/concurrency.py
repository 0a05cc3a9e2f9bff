"""How many model calls are in flight: one flag on every command, ``--concurrency``, with a default that
suits the backend (``--max-concurrency``, its old spelling, is still taken, with a warning)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from consilium.spec.connection import BACKEND_CONCURRENCY, DEFAULT_CONCURRENCY

__all__ = ["CONCURRENCY_HELP", "add_concurrency_argument"]

CONCURRENCY_HELP = (", ".join(f"{name} {n}" for name, n in BACKEND_CONCURRENCY.items())
                    + f", others {DEFAULT_CONCURRENCY}")


class _Deprecated(argparse.Action):
    """A flag's old spelling: still taken, with a warning on stderr naming the new one."""

    def __init__(self, *args: Any, new: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"consilium: warning: {option_string} is deprecated, use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_concurrency_argument(group: argparse._ActionsContainer, kind: Callable[[str], int]) -> None:
    """``--concurrency N`` (and its hidden old spelling ``--max-concurrency``), into ``args.concurrency``."""
    group.add_argument("--concurrency", type=kind, default=None, metavar="N",
                       help=f"model calls in flight (a cohort's across all its arms) (default: by backend: "
                            f"{CONCURRENCY_HELP}; or the model config's max_concurrency)")
    group.add_argument("--max-concurrency", type=kind, dest="concurrency", action=_Deprecated,
                       new="--concurrency", help=argparse.SUPPRESS)
