"""``consilium cohort``'s flags read into the study spec (consilium/spec/study.py): each field names its flag,
so every flag is read alike; ``cohort`` and its ``--shard`` / ``--ray`` runner both start from here."""

from __future__ import annotations

import argparse
from typing import Any

from consilium.cli.options import model_spec
from consilium.spec.study import StudySpec, option_of, study_of

__all__ = ["SOURCES", "study_from_args"]


#: The cohort's flags that are not fields of the study: where it comes from or goes, and what to do with it.
SOURCES = ("experiment", "resume", "estimate", "like", "otel", "extra_model")


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
