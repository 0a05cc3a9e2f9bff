"""``consilium cohort``'s flags made from the study spec and read back into it (consilium/spec/study.py): each
field declares its flag, with its help and argparse keywords as data, so every flag is made and read alike."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from consilium.cli.options import finite_float, model_spec, positive_float, positive_int
from consilium.cohort.protocols import protocol_list
from consilium.cohort.shard import Shard
from consilium.errors import UserError
from consilium.spec.study import StudySpec, option_of, study_of

__all__ = ["SOURCES", "add_study_flags", "protocol_arg", "shard_arg", "study_from_args"]


#: The cohort's flags that are not fields of the study: where it comes from or goes, and what to do with it.
SOURCES = ("experiment", "resume", "estimate", "like", "otel", "extra_model")


def protocol_arg(text: str) -> list[str]:
    """argparse type for ``--protocol``: one or more of the protocols a cohort can run, comma-separated."""
    try:
        return protocol_list(text, flag="--protocol")
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--protocol: ")) from None


def shard_arg(text: str) -> Shard:
    """argparse type for ``--shard``: a bad value is argparse's one-line error, exit 2."""
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The argparse types a spec field's flag names (``Option.args["type"]``).
TYPES: dict[str, Callable[[str], Any]] = {
    "path": Path, "int": int, "number": finite_float, "positive_int": positive_int,
    "positive_number": positive_float, "protocols": protocol_arg, "shard": shard_arg}


def add_study_flags(parser: argparse.ArgumentParser) -> None:
    """The flag of each spec field that declares one with its help, in the spec's order (the model flags, the
    judges' scope and decoding and the role labels are groups other commands share, added by the command)."""
    for name in StudySpec.model_fields:
        option = option_of(name)
        if option.flag is None or option.help is None:
            continue
        args = dict(option.args)
        aliases = args.pop("aliases", [])
        if "type" in args:
            args["type"] = TYPES[args["type"]]
        parser.add_argument(option.flag, *aliases, **args, help=option.help)


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def study_from_args(args: argparse.Namespace) -> StudySpec:
    """The study the flags give: each spec field from the flag it names (consilium/spec/study.py), a flag not
    given left out. ``--model`` with ``--extra-model`` is the panel; ``--formats a,b`` a list."""
    values: dict[str, Any] = {}
    for name in StudySpec.model_fields:
        flag = option_of(name).flag
        value = getattr(args, _dest(flag), None) if flag is not None else None
        if name == "models" and (value or args.extra_model):
            value = [value or model_spec(args), *args.extra_model]
        elif name in ("formats", "modes") and isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        elif name == "shard" and value is not None:
            value = str(value)
        if value is not None and value is not False and value != []:
            values[name] = value
    # a kind of variant a protocol declares beside formats and modes: its flag --<kind> (consilium/cli/cohort_cmd.py)
    kinds = {dest.removeprefix("variants_"): value for dest, value in vars(args).items()
             if dest.startswith("variants_") and value is not None}
    if kinds:
        values["variants"] = kinds
    return study_of(values, by="flag")
