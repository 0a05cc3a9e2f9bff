"""An experiment file as a study spec, and a spec given beside it laid over it.

The file (consilium/cohort/experiment.py) may name everything a study needs; here each of its keys becomes the
spec field that declares it (consilium/spec/study.py, ``Option.experiment``): ``models`` the panel's specs
(its first mapping's options the connection fields, a later one's :data:`OWN_OPTIONS` ``own_options``),
``run.seed`` the seed, … A field given beside the file wins, and the manifest records which did
(``settings.experiment.overridden``, by flag) beside the file's content and SHA-256.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from consilium.cohort.experiment import Experiment, ModelEntry, entry_spec, judge_specs, load_experiment
from consilium.datafiles import first_error, read_data_file
from consilium.errors import UserError
from consilium.models.config_file import ModelConfigFile
from consilium.spec.manifest import ExperimentRecord
from consilium.spec.study import OwnOptions, StudySpec, option_of

__all__ = ["JUDGE_OPTIONS", "OWN_OPTIONS", "Sourced", "study_from_experiment", "with_experiment"]

#: What a panel model after the first may carry itself: what the model is (its prices, the request shape a
#: reasoning model needs), not how it is reached (the cohort reaches every model with the first's connection).
OWN_OPTIONS = ("prices", "token_param", "omit_settings")

#: What a judge's mapping may carry beside its spec: its own server and the variable holding that server's key
#: (as ``SPEC@BASE_URL#KEY_VAR``; a model config file's path names a judge with every other option).
JUDGE_OPTIONS = ("base_url", "api_key_env")

#: The fields the panel's first model decides: given beside the file (a flag), none of the file's models is taken.
_PANEL = ("models", "model_file")


@dataclass
class Sourced:
    """A spec with the experiment it was laid over: the record the manifest keeps, the file as read, and the
    fields the file set (an error about one names the file's key, not a flag)."""

    spec: StudySpec
    experiment: Experiment = field(default_factory=Experiment)
    record: ExperimentRecord | None = None
    from_file: set[str] = field(default_factory=set)

    @property
    def experiment_path(self) -> str | None:
        """The experiment file as given (an error names it so)."""
        return self.given_path

    given_path: str | None = None


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


def _keyed(spec_key: str) -> dict[str, str]:
    """Spec field → its key under ``spec_key.`` in the file (``run.seed`` → seed), for the fields that have one."""
    prefix = spec_key + "."
    return {name: key.removeprefix(prefix) for name in StudySpec.model_fields
            if (key := option_of(name).experiment) is not None and key.startswith(prefix)}


def _panel(experiment: Experiment, where: str) -> dict[str, Any]:
    """The fields the file's panel models set: their specs, the first's options, the others' own options."""
    models = experiment.models or []
    if not models:
        return {}
    files = [_model_file(m, f"{where}models.{i}", options=True if i == 0 else OWN_OPTIONS)
             for i, m in enumerate(models)]
    first = files[0]
    values: dict[str, Any] = {"models": [entry_spec(m) for m in models]}
    for name, key in _keyed("models.0").items():
        value = getattr(first, key)
        if value is not None:
            values[name] = ",".join(value) if isinstance(value, list) and key == "base_url" else value
    own = {entry_spec(m): OwnOptions(**{k: getattr(f, k) for k in OWN_OPTIONS})
           for m, f in zip(models[1:], files[1:], strict=True) if any(getattr(f, k) is not None for k in OWN_OPTIONS)}
    return {**values, **({"own_options": own} if own else {})}


def study_from_experiment(path: Path) -> tuple[StudySpec, Experiment]:
    """The spec an experiment file describes (its paths absolute), and the file as read."""
    experiment = load_experiment(path)
    where = f"{path}: "
    fields = experiment.model_fields_set
    values: dict[str, Any] = {name: experiment.run[key] for name, key in _keyed("run").items()
                              if key in experiment.run}
    values["run"] = {k: v for k, v in experiment.run.items() if k not in _keyed("run").values()}
    for name in ("cases", "formats", "modes", "judges", "replicates", "seeds"):
        if name in fields and getattr(experiment, name) is not None:
            values[name] = getattr(experiment, name)
    if experiment.variants:
        values["variants"] = experiment.variants
    if "protocol" in fields:
        values["protocols"] = experiment.protocols
    values.update(_panel(experiment, where))
    if experiment.moderator_model is not None:
        _model_file(experiment.moderator_model, f"{where}moderator_model", options=False)
        values["moderator"] = entry_spec(experiment.moderator_model)
    judge = experiment.judge_model
    entries: list[ModelEntry] = judge if isinstance(judge, list) else [judge] if judge is not None else []
    for i, entry in enumerate(entries):  # a judge may live on its own server (consilium/models/refs.py)
        _model_file(entry, f"{where}judge_model" + (f".{i}" if isinstance(judge, list) else ""), options=JUDGE_OPTIONS)
    if judge is not None:
        values["judge_model"] = judge_specs(experiment)
    try:
        return StudySpec.model_validate(values, context={"judge_model": f"{path}: judge_model",
                                                         "indexed": isinstance(judge, list)}), experiment
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc)}") from None


def with_experiment(given: StudySpec, path: Path | None) -> Sourced:
    """``given`` laid over the experiment file at ``path`` (None: ``given`` alone). A run setting a ``--config``
    file sets is the file's, not the experiment's (experiment < config file < flags)."""
    if path is None:
        return Sourced(given)
    under, experiment = study_from_experiment(path)
    if experiment.seeds is not None and given.seed is not None:  # it would be silently ignored
        raise UserError(f"--seed: {path} sets each replicate's seed (seeds:)")
    mine = given.given()
    drop: set[str] = set()
    if any(name in mine for name in _PANEL):  # the panel is the flags': none of the file's models, nor options
        drop |= {"models", "own_options", *_keyed("models.0")}
    if given.config is not None:
        in_file = read_data_file(given.config, "config") or {}
        keys = set(in_file) if isinstance(in_file, dict) else set()
        drop |= {name for name, key in _keyed("run").items() if key in keys}
        under = under.model_copy(update={"run": {k: v for k, v in under.run.items() if k not in keys}})
    # each variant kind apart (a flag of one kind leaves the file's others): "variants.<kind>", as given_variants asks
    file_set = {name for name in under.given() if name not in drop} | {f"variants.{k}" for k in under.variants}
    named = {*mine, *(f"variants.{k}" for k in given.variants)}
    kept = under.model_copy(update={name: StudySpec.model_fields[name].get_default(call_default_factory=True)
                                    for name in drop})
    overridden = [option_of(name).flag or name for name in StudySpec.model_fields if name in mine and name in file_set]
    overridden += [f"--{name.removeprefix('variants.')}" for name in sorted(named & file_set) if "." in name]
    if given.config is not None and experiment.run:
        overridden.append("--config")
    data = path.read_bytes()
    record = ExperimentRecord(path=str(path.resolve()), sha256=hashlib.sha256(data).hexdigest(),
                              content=experiment.model_dump(mode="json"),
                              overridden=[flag for flag in dict.fromkeys(overridden) if flag.startswith("--")])
    return Sourced(given.over(kept), experiment, record, file_set - named, str(path))
