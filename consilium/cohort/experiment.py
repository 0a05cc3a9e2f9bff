"""An experiment file (configs/experiments/*.yaml): everything a study needs, so that ``consilium cohort
--experiment FILE`` alone runs it again: the cases, the panel and judge models (a spec, or a mapping of a
spec and the options a model config file takes), the protocols and their variants, the run settings, the
judges (rubrics), and the replicates with their seeds. Paths (``cases``, a ``scripted:``/``gguf:``/
``replay:`` file) are relative to the experiment file. docs/cohorts.md, "Experiment files", lists every field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from consilium.agents.records import FORMATS, Format
from consilium.cohort.cases import cases_exist, glob_files
from consilium.cohort.protocols import protocol_problem, split_settings
from consilium.datafiles import first_error, load_data_file
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol, variant_kinds
from consilium.judges.rubric import load_rubric
from consilium.models.refs import CONFIG_SUFFIXES
from consilium.spec.study import FILE_SPECS

__all__ = ["MAX_REPLICATES", "Experiment", "ModelEntry", "entry_spec", "file_spec", "judge_specs", "load_experiment",
           "replicate_seeds"]


#: A model as an experiment names it: a spec, or a mapping of ``spec`` and a model config file's options
#: (``base_url``, ``schema_dialect``, …; consilium/cli/options.py ``ModelConfigFile``, checked there).
ModelEntry = str | dict[str, Any]

#: The most replicates an experiment may ask for: each is a full run of every arm.
MAX_REPLICATES = 1000

Mode = Literal["agents", "single"]
MODES: tuple[Mode, ...] = ("agents", "single")


class Experiment(BaseModel):
    """An experiment setup file (configs/experiments/*.yaml)."""

    # Strict, as the run configs are: a bad format or mode names the file's field, not a flag.
    model_config = ConfigDict(extra="forbid", strict=True)

    description: str = ""
    protocol: str | list[str] = Field(default="consilium", description="a protocol, or a list run side by side")
    formats: list[Format] = Field(default_factory=lambda: list(FORMATS), min_length=1)
    modes: list[Mode] = Field(default_factory=lambda: list(MODES), min_length=1)
    variants: dict[str, list[str]] = Field(default_factory=dict, description="the variants of another kind a "
                                           "protocol declares (a plugin's), by kind: each written as its own key, "
                                           "as formats and modes are (tempos: [brisk])")
    run: dict[str, Any] = Field(default_factory=dict, description="run settings; each protocol takes those of "
                                                                 "its config (ConsiliumConfig, BoardConfig, …)")
    judges: list[str] = Field(default=[], description="the rubrics the arms are scored with")
    cases: str | None = Field(default=None, min_length=1, description="a folder of case files, a case file, an "
                              "AgentClinic .jsonl or a glob pattern of them, relative to the file")
    models: list[ModelEntry] | None = Field(default=None, min_length=1, description="the panel models: the "
                                            "first is --model, the others --extra-model")
    moderator_model: ModelEntry | None = Field(default=None, description="every arm's moderator (default: the "
                                               "arm's panel model)")
    judge_model: ModelEntry | list[ModelEntry] | None = Field(
        default=None, description="the judge's model, or a list: a jury, as --judge-model given for each "
                                  "(docs/judges.md, Juries)")
    replicates: int | None = Field(default=None, ge=1, le=MAX_REPLICATES, description="each arm run this many "
                                   "times, replicate i with seed = run.seed + i (or seeds[i])")
    seeds: list[int] | None = Field(default=None, min_length=1, max_length=MAX_REPLICATES,
                                    description="the replicates' seeds, one each")

    @model_validator(mode="before")
    @classmethod
    def _own_kinds(cls, data: Any) -> Any:
        """A key naming a variant kind a protocol declares (``tempos:``) is that kind's variants."""
        if not isinstance(data, dict):
            return data
        kinds = [k for k in variant_kinds() if k not in cls.model_fields and k in data]
        if not kinds:
            return data
        return {**{k: v for k, v in data.items() if k not in kinds},
                "variants": {**(data.get("variants") or {}), **{k: data[k] for k in kinds}}}

    @field_validator("seeds")
    @classmethod
    def _seeds_match(cls, value: list[int] | None, info: ValidationInfo) -> list[int] | None:
        replicates = info.data.get("replicates")
        if value is not None and replicates is not None and len(value) != replicates:
            raise PydanticCustomError("seeds", "{n} seeds for {r} replicates (give one seed per replicate, or "
                                      "leave one of the two out)", {"n": len(value), "r": replicates})
        if value is not None and len(set(value)) != len(value):
            raise PydanticCustomError("seeds", "a seed is repeated (each replicate needs its own)")
        return value

    @field_validator("protocol")
    @classmethod
    def _protocols(cls, value: str | list[str]) -> str | list[str]:
        problem = protocol_problem([value] if isinstance(value, str) else value)
        if problem is not None:
            raise PydanticCustomError("protocol", problem)
        return value

    @property
    def protocols(self) -> list[str]:
        return [self.protocol] if isinstance(self.protocol, str) else list(self.protocol)


def file_spec(spec: str, base: Path) -> str:
    """A spec that names a file, with that file resolved against ``base`` (absolute); any other as it is. A
    model config file (a judge's: consilium/models/refs.py) is a file too."""
    if ":" not in spec and spec.lower().endswith(CONFIG_SUFFIXES):
        return str((base / spec).resolve())
    kind, _, arg = spec.partition(":")
    if kind in FILE_SPECS and arg and not Path(arg).is_absolute():
        return f"{kind}:{(base / arg).resolve()}"
    return spec


def entry_spec(entry: ModelEntry) -> str:
    """A model entry's spec (a mapping's ``spec``; an entry without one is refused on load)."""
    return entry if isinstance(entry, str) else str(entry["spec"])


def _resolved(entry: ModelEntry, base: Path, where: str) -> ModelEntry:
    spec = entry if isinstance(entry, str) else entry.get("spec")
    if not isinstance(spec, str) or not spec:
        raise UserError(f"{where}.spec: a model mapping needs its spec (a non-empty string)")
    return file_spec(spec, base) if isinstance(entry, str) else {**entry, "spec": file_spec(spec, base)}


def _jury(entries: list[ModelEntry], base: Path, where: str) -> list[ModelEntry]:
    """A jury's judges, resolved (the study spec refuses none, or one given twice: consilium/spec/study.py)."""
    return [_resolved(entry, base, f"{where}.{i}") for i, entry in enumerate(entries)]


def _once(values: list[str], path: Path, field: str, what: str) -> None:
    """:class:`UserError` naming both places of a value listed twice (it would be merged silently)."""
    for i, value in enumerate(values):
        if value in values[:i]:
            raise UserError(f"{path}: {field}.{i}: {value} is listed twice ({field}.{values.index(value)} and "
                            f"{field}.{i}; {what} once)")


def judge_specs(experiment: Experiment) -> list[str]:
    """The judges the file names: its ``judge_model``, or each of its jury, in order (none: []); a judge on
    its own server (a mapping with ``base_url``) as ``SPEC@BASE_URL#API_KEY_ENV`` (consilium/models/refs.py)."""
    entry = experiment.judge_model
    return [] if entry is None else [_judge_ref(e) for e in (entry if isinstance(entry, list) else [entry])]


def _judge_ref(entry: ModelEntry) -> str:
    if isinstance(entry, str) or not entry.get("base_url"):
        return entry_spec(entry)
    key = entry.get("api_key_env")
    return f"{entry_spec(entry)}@{entry['base_url']}" + (f"#{key}" if key else "")


def load_experiment(path: Path) -> Experiment:
    """The file, with its ``run:`` checked by each protocol's config model on the keys that model has, its
    rubrics known, its case path present, and its paths made absolute (against the file's folder)."""
    experiment = load_data_file(path, Experiment, "experiment")
    for name, values in split_settings(experiment.run, experiment.protocols, f"{path}: run.").items():
        try:
            get_protocol(name).config_model.model_validate(values)
        except ValidationError as exc:
            raise UserError(f"{path}: {first_error(exc, prefix='run.')}") from None
    for i, rubric in enumerate(experiment.judges):
        load_rubric(rubric, flag=f"{path}: judges.{i}")
    base = path.resolve().parent
    update: dict[str, Any] = {}
    if experiment.cases is not None:
        cases = base / experiment.cases
        cases = cases if glob_files(cases) is not None else cases.resolve()
        if not cases_exist(cases):
            raise UserError(f"{path}: cases: {cases}: " + ("matches no file" if glob_files(cases) is not None
                                                           else "no such folder or file"))
        update["cases"] = str(cases)
    if experiment.models is not None:
        update["models"] = [_resolved(m, base, f"{path}: models.{i}") for i, m in enumerate(experiment.models)]
        _once([entry_spec(m) for m in update["models"]], path, "models", "each panel model")
    for field in ("formats", "modes", "judges"):
        _once(list(getattr(experiment, field)), path, field, f"each of {field}")
    for kind, names in experiment.variants.items():
        _once(names, path, kind, f"each of {kind}")
    if experiment.moderator_model is not None:
        update["moderator_model"] = _resolved(experiment.moderator_model, base, f"{path}: moderator_model")
    if isinstance(experiment.judge_model, list):
        update["judge_model"] = _jury(experiment.judge_model, base, f"{path}: judge_model")
    elif experiment.judge_model is not None:
        update["judge_model"] = _resolved(experiment.judge_model, base, f"{path}: judge_model")
    # model_copy keeps model_fields_set, so a field the file left out still sets nothing (configs.given_variants).
    return experiment.model_copy(update=update)


def replicate_seeds(experiment: Experiment, base_seed: int) -> list[int] | None:
    """The seed of each replicate: the file's ``seeds``, else ``base_seed + i`` for i < ``replicates``; None
    when the file asks for neither (each arm runs once, with its run settings' seed)."""
    if experiment.seeds is not None:
        return list(experiment.seeds)
    if experiment.replicates is not None:
        return [base_seed + i for i in range(experiment.replicates)]
    return None

