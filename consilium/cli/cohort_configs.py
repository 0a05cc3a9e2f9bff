"""Each protocol's variants and run settings in a cohort, from the layers that set them.

Lowest first: the protocol's defaults, the experiment file (its variants and ``run:`` settings), a
``--config`` file, then flags. Planning a new cohort takes them all; resuming one parses them again only to
refuse what differs from the manifest (consilium/cli/cohort_plan.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from consilium.cli.labels import with_role_labels
from consilium.cli.options import flag_name, run_config
from consilium.cohort.experiment import Experiment, experiment_variants
from consilium.cohort.protocols import VARIANT_FLAGS, split_settings
from consilium.datafiles import read_data_file
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol
from consilium.traces.config import RunConfig

__all__ = ["RUN_FLAGS", "config_file_settings", "given_run_flags", "given_variants", "protocol_configs"]


def config_file_settings(path: Path) -> dict[str, Any]:
    """A --config file's settings, every key checked to belong to a protocol of the cohort by the caller."""
    loaded = read_data_file(path, "config") or {}
    if not isinstance(loaded, dict):
        raise UserError(f"{path}: a config file must be a mapping of settings")
    return loaded


def given_variants(args: argparse.Namespace, experiment: Experiment | None, protocols: list[str]
                   ) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The variants the experiment file sets, then the flags given (flag → names), and where each came from."""
    given, where = experiment_variants(experiment, protocols, args.experiment) if experiment else ({}, {})
    for flag, name in VARIANT_FLAGS.items():
        text = getattr(args, name, None)
        if text:
            given[flag] = [part.strip() for part in text.split(",") if part.strip()]
            where[flag] = flag
    return given, where


def protocol_configs(protocols: list[str], args: argparse.Namespace, experiment: Experiment,
                     specs: list[str]) -> dict[str, RunConfig]:
    """Each protocol's run settings, in layers: the defaults, the experiment's run settings, a --config
    file, then flags; each protocol takes the keys its config has. Unset, role_labels follows the cohort's
    models (every arm of a cohort has the same settings): catalogue only if all of them default to it."""
    flags = {"timeout_s": args.timeout, "wall_limit_s": args.wall_limit, "role_labels": args.role_labels,
             **given_run_flags(args, protocols)}
    in_file = config_file_settings(args.config) if args.config else {}
    split_settings(in_file, protocols, f"{args.config}: ")  # a key no protocol has names the file
    under = split_settings({k: v for k, v in experiment.run.items() if k not in in_file}, protocols,
                           f"{args.experiment}: run.")
    return {name: with_role_labels(run_config(get_protocol(name).config_model, args.config,
                                              {**under[name], **_own(flags, name)}, known_only=True), *specs)
            for name in protocols}


#: Run-settings flags a cohort shares with ``simulate`` (argparse dest → config field).
RUN_FLAGS = {"seed": "seed", "temperature": "temperature", "max_rounds": "max_rounds"}


def given_run_flags(args: argparse.Namespace, protocols: list[str]) -> dict[str, Any]:
    """The ``--seed``, ``--temperature`` and ``--max-rounds`` given, by field; one that no protocol of the
    cohort has is refused, as ``simulate`` refuses it."""
    given = {key: getattr(args, dest, None) for dest, key in RUN_FLAGS.items()}
    given = {key: value for key, value in given.items() if value is not None}
    for key in given:
        if not any(key in get_protocol(name).config_model.model_fields for name in protocols):
            raise UserError(f"{flag_name(key)}: not a setting of protocol {', '.join(map(repr, protocols))}")
    return given


def _own(flags: dict[str, Any], protocol: str) -> dict[str, Any]:
    """The flags that are settings of ``protocol`` (``--max-rounds`` is the consilium's, not the board's)."""
    fields = get_protocol(protocol).config_model.model_fields
    return {key: value for key, value in flags.items() if key in fields}
