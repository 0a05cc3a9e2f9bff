"""Each protocol's variants and run settings in a cohort, from the layers that set them.

Lowest first: the protocol's defaults, the experiment file (its variants and ``run:`` settings), a
``--config`` file, then flags. Planning a new cohort takes them all; resuming one parses them again only to
refuse what differs from the manifest (consilium/cohort/plan.py, consilium/cohort/resume.py). Each layer
above the defaults is a field of the study spec (consilium/spec/study.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from consilium.agents.labels import with_role_labels
from consilium.cohort.protocols import split_settings
from consilium.cohort.study_sources import Sourced
from consilium.datafiles import read_data_file
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol, variant_kinds
from consilium.spec.run_settings import flag_name, run_config
from consilium.spec.study import VARIANT_FIELDS, StudySpec, option_of
from consilium.traces.config import RunConfig

__all__ = ["RUN_FIELDS", "config_file_settings", "given_run_fields", "given_variants", "protocol_configs"]


def config_file_settings(path: Path) -> dict[str, Any]:
    """A --config file's settings, every key checked to belong to a protocol of the cohort by the caller."""
    loaded = read_data_file(path, "config") or {}
    if not isinstance(loaded, dict):
        raise UserError(f"{path}: a config file must be a mapping of settings")
    return loaded


def given_variants(sourced: Sourced, protocols: list[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The variants given (flag → names), of every kind the protocols declare (and any other given, which
    cohort_variants refuses), and where each came from: the flag ``--<kind>``, or the experiment file's key
    ``<kind>``. A kind the file sets that no protocol of the cohort runs in sets nothing."""
    spec, path = sourced.spec, sourced.record.path if sourced.record else None
    flags = {get_protocol(name).variant_flag for name in protocols}
    given: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for kind in dict.fromkeys([*variant_kinds(), *spec.variants]):
        names, flag = spec.chosen(kind), f"--{kind}"
        in_file = (kind if kind in VARIANT_FIELDS else f"variants.{kind}") in sourced.from_file
        if names is None or (in_file and flag not in flags):
            continue
        given[flag] = list(names)
        where[flag] = f"{sourced.experiment_path}: {kind}" if in_file and path else flag
    return given, where


def protocol_configs(protocols: list[str], sourced: Sourced, specs: list[str]) -> dict[str, RunConfig]:
    """Each protocol's run settings, in layers: the defaults, the experiment's run settings, a --config
    file, then the spec's run fields (flags, or the experiment's where no --config file sets them); each
    protocol takes the keys its config has. Unset, role_labels follows the cohort's models (every arm of a
    cohort has the same settings): catalogue only if all of them default to it."""
    spec = sourced.spec
    flags = {"timeout_s": spec.timeout, "wall_limit_s": spec.wall_limit, "role_labels": spec.role_labels,
             **given_run_fields(spec, protocols)}
    in_file = config_file_settings(spec.config) if spec.config else {}
    split_settings(in_file, protocols, f"{spec.config}: ")  # a key no protocol has names the file
    under = split_settings({k: v for k, v in spec.run.items() if k not in in_file}, protocols,
                           f"{sourced.experiment_path}: run." if sourced.experiment_path else "run.")
    return {name: with_role_labels(run_config(get_protocol(name).config_model, spec.config,
                                              {**under[name], **_own(flags, name)}, known_only=True), *specs)
            for name in protocols}


#: Run settings with a spec field of their own that every run command shares (spec field → config field).
RUN_FIELDS = {"seed": "seed", "temperature": "temperature", "max_rounds": "max_rounds"}


def given_run_fields(spec: StudySpec, protocols: list[str]) -> dict[str, Any]:
    """The seed, temperature and max_rounds given, by config field; one that no protocol of the cohort has is
    refused, naming its flag, as ``simulate`` refuses it."""
    given = {key: getattr(spec, name) for name, key in RUN_FIELDS.items() if getattr(spec, name) is not None}
    for key in given:
        if not any(key in get_protocol(name).config_model.model_fields for name in protocols):
            raise UserError(f"{option_of(key).flag or flag_name(key)}: not a setting of protocol "
                            f"{', '.join(map(repr, protocols))}")
    return given


def _own(flags: dict[str, Any], protocol: str) -> dict[str, Any]:
    """The flags that are settings of ``protocol`` (``--max-rounds`` is the consilium's, not the board's)."""
    fields = get_protocol(protocol).config_model.model_fields
    return {key: value for key, value in flags.items() if key in fields}
