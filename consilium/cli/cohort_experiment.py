"""``cohort --experiment FILE``: what the experiment file sets, as the flags it stands for, and its record.

The file (consilium/cohort/experiment.py) may name everything a cohort needs, so ``--experiment FILE``
alone runs it. Here its cases and models become the flags they stand for (``--cases``, ``--model`` and
``--extra-model``, ``--moderator-model``, ``--judge-model``), and the first model's options (a mapping,
checked as a ``--model-config`` file is) the option flags; a flag given beside the file wins, and the manifest
records which did (``settings.experiment.overridden``) beside the file's content and SHA-256. Another panel
model may carry what is its own (:data:`OWN_OPTIONS`: its prices and request shape), never how it is reached.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from consilium.cli.options import ModelConfigFile
from consilium.cohort.experiment import Experiment, ModelEntry, entry_spec, judge_specs, load_experiment
from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.models.factory import ModelOptions
from consilium.spec.manifest import ExperimentRecord, OwnModelOptions

__all__ = ["JUDGE_OPTIONS", "OWN_OPTIONS", "ExperimentSetup", "apply_experiment", "own_model_options", "own_records"]

#: What a panel model after the first may carry itself: what the model is (its prices, the request shape a
#: reasoning model needs), not how it is reached (the cohort reaches every model with the first's connection).
OWN_OPTIONS = ("prices", "token_param", "omit_settings")

#: What a judge's mapping may carry beside its spec: its own server and the variable holding that server's key
#: (as ``SPEC@BASE_URL#KEY_VAR``; a model config file's path names a judge with every other option).
JUDGE_OPTIONS = ("base_url", "api_key_env")

#: A model mapping's options and the flag (``args`` attribute) each stands for.
_OPTION_FLAGS = {"base_url": "base_url", "schema_dialect": "schema_dialect", "http_client": "http_client",
                 "max_concurrency": "concurrency", "timeout_s": "timeout", "token_param": "token_param"}
#: The experiment's fields and the flags that replace them.
_FIELD_FLAGS = {"cases": ("--cases",), "models": ("--model", "--model-config", "--extra-model"),
                "judge_model": ("--judge-model",), "moderator_model": ("--moderator-model",),
                "judges": ("--judge",), "protocol": ("--protocol",),
                "formats": ("--formats",), "modes": ("--modes",), "run": ("--config",)}
#: Run settings a flag replaces (a ``run:`` key given again as a flag is recorded as overridden).
_RUN_FLAGS = {"seed": "--seed", "temperature": "--temperature", "max_rounds": "--max-rounds",
              "timeout_s": "--timeout", "wall_limit_s": "--wall-limit", "role_labels": "--role-labels"}


class ExperimentSetup:
    """The file as read, its record for the manifest, what the first model mapping sets that has no flag
    (``api_key_env``, ``omit_settings``, ``prices``): extra :func:`~consilium.cli.options.model_options` values,
    and ``own``: spec → the mapping of each later panel model that carries its own :data:`OWN_OPTIONS`."""

    def __init__(self, experiment: Experiment, record: ExperimentRecord | None,
                 options: dict[str, Any], api_key_env: str | None,
                 own: dict[str, ModelConfigFile] | None = None) -> None:
        self.experiment = experiment
        self.record = record
        self.options = options
        self.api_key_env = api_key_env
        self.own = own or {}


def _model_file(entry: ModelEntry, where: str, *, options: bool | tuple[str, ...]) -> ModelConfigFile:
    """A model entry as a model config file; ``options``: True takes every option, a tuple only those, False
    none beside the spec."""
    values = {"spec": entry} if isinstance(entry, str) else entry
    try:
        config = ModelConfigFile.model_validate(values)
    except ValidationError as exc:
        raise UserError(f"{where}.{first_error(exc)}") from None
    allowed = () if options is False else options if isinstance(options, tuple) else None
    extra = sorted(k for k in values if k not in ("spec", "description") and allowed is not None and k not in allowed)
    if extra and extra[0] == "prices" and options in (False, JUDGE_OPTIONS):  # never priced by a file
        raise UserError(f"{where}.prices: only panel models take prices (models.N.prices); a judge or moderator "
                        "model is priced only when its spec is a priced panel model's")
    if extra and allowed == JUDGE_OPTIONS:
        raise UserError(f"{where}.{extra[0]}: a judge's mapping takes only spec, base_url and api_key_env (its own "
                        "server); name a model config file instead for its other settings")
    if extra:
        own = f" (another panel model may carry only its own {', '.join(allowed)})" if allowed else ""
        raise UserError(f"{where}.{extra[0]}: the cohort reaches every model with one set of options; give them "
                        f"on the first panel model (models.0){own}")
    return config


def _given(args: argparse.Namespace, flag: str) -> bool:
    value = getattr(args, flag.removeprefix("--").replace("-", "_"), None)
    return bool(value) if isinstance(value, list) else value is not None


def apply_experiment(args: argparse.Namespace) -> ExperimentSetup:
    """Read ``--experiment`` (none: an empty experiment) and fill in the flags it sets that were not given."""
    path: Path | None = args.experiment
    if path is None:
        return ExperimentSetup(Experiment(), None, {}, None)
    experiment = load_experiment(path)
    where = f"{path}: "
    fields = experiment.model_fields_set
    overridden = [flag for name, flags in _FIELD_FLAGS.items() if name in fields
                  for flag in flags if _given(args, flag)]
    overridden += [flag for key, flag in _RUN_FLAGS.items() if key in experiment.run and _given(args, flag)]
    if experiment.seeds is not None and getattr(args, "seed", None) is not None:  # it would be silently ignored
        raise UserError(f"--seed: {path} sets each replicate's seed (seeds:)")
    if experiment.cases is not None and args.cases is None:
        args.cases = Path(experiment.cases)
    options: dict[str, Any] = {}
    api_key_env = None
    models = experiment.models or []
    files = [_model_file(m, f"{where}models.{i}", options=True if i == 0 else OWN_OPTIONS)
             for i, m in enumerate(models)]
    own: dict[str, ModelConfigFile] = {}
    if models and not (args.model or args.model_config or args.extra_model):
        args.model = entry_spec(models[0])
        args.extra_model = [entry_spec(m) for m in models[1:]]
        own = {entry_spec(m): f for m, f in zip(models[1:], files[1:], strict=True)
               if any(getattr(f, option) is not None for option in OWN_OPTIONS)}
        first = files[0]
        for field, flag in _OPTION_FLAGS.items():
            value = getattr(first, field)
            if value is None:
                continue
            if getattr(args, flag, None) is not None:
                overridden.append("--" + flag.replace("_", "-"))
                continue
            setattr(args, flag, ",".join(value) if isinstance(value, list) else value)
        if first.omit_settings is not None:
            options["omit_settings"] = tuple(first.omit_settings)
        if first.prices is not None:  # the first model's (the plan prices that spec alone)
            options["prices"] = first.prices
        if first.api_key_env:
            key = os.environ.get(first.api_key_env)
            if not key:
                raise UserError(f"{where}models.0.api_key_env: ${first.api_key_env} is not set")
            options["api_key"], api_key_env = key, first.api_key_env
    if experiment.moderator_model is not None:
        _model_file(experiment.moderator_model, f"{where}moderator_model", options=False)
        if getattr(args, "moderator_model", None) is None:
            args.moderator_model = entry_spec(experiment.moderator_model)
    judge = experiment.judge_model
    entries: list[ModelEntry] = judge if isinstance(judge, list) else [judge] if judge is not None else []
    for i, entry in enumerate(entries):  # a judge may live on its own server (consilium/models/refs.py)
        _model_file(entry, f"{where}judge_model" + (f".{i}" if isinstance(judge, list) else ""), options=JUDGE_OPTIONS)
    if entries and getattr(args, "judge_model", None) is None:  # a list: a jury, as --judge-model given for each
        args.judge_model, *args.jury_models = judge_specs(experiment)
    data = path.read_bytes()
    record = ExperimentRecord(path=str(path.resolve()), sha256=hashlib.sha256(data).hexdigest(),
                              content=experiment.model_dump(mode="json"), overridden=list(dict.fromkeys(overridden)))
    return ExperimentSetup(experiment, record, options, api_key_env, own)


def own_records(own: dict[str, ModelConfigFile], shared: ModelOptions) -> dict[str, OwnModelOptions]:
    """spec → what the manifest records of a panel model that carries its own options: its request shape (the
    cohort's where it sets none) and its prices (none: unpriced, as any model but the first)."""
    return {spec: OwnModelOptions(
        token_param=config.token_param or shared.token_param,
        omit_settings=list(config.omit_settings) if config.omit_settings is not None
        else list(shared.omit_settings) if shared.omit_settings is not None else None,
        prices=config.prices) for spec, config in own.items()}


def own_model_options(records: dict[str, OwnModelOptions] | None, shared: ModelOptions) -> dict[str, ModelOptions]:
    """spec → the options its model is built with: the cohort's, with the model's own request shape, and its
    own prices, priced by its own spec (``prices_spec``: the shared layers price that spec alone)."""
    return {spec: dataclasses.replace(
        shared, token_param=record.token_param,
        omit_settings=tuple(record.omit_settings) if record.omit_settings is not None else None,
        prices=record.prices, prices_spec=spec) for spec, record in (records or {}).items()}
