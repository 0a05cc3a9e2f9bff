"""The study spec: one typed description of a cohort study, whichever way it was given.

A study is given by the command line's flags, by an experiment file, or by the Python API's keywords; each is
turned into a :class:`StudySpec` (consilium/cli/cohort_cmd.py, consilium/cohort/study_sources.py,
consilium/api/cohorts.py) and checked here, once. Each field declares the flag that sets it
(:class:`Option`, with its help), the experiment file's key that sets it, and whether a resume may change it, so
a new option is a new field: the API takes it as a keyword, the command line has its flag, the flags and the
experiment are read into it, and a resume compares it (docs/cohorts.md, "The study spec").

A spec holds what was *given* (None: not given, the planner's default). The manifest stores the spec of the
cohort with its hash (consilium/spec/manifest.py); a resume compares the spec it is given with that one.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.models.pricing import Prices
from consilium.models.refs import distinct, parse_model_ref
from consilium.spec.option import Option, option_in
from consilium.spec.option import option_field as _opt

__all__ = ["FILE_SPECS", "MAY_DIFFER", "VARIANT_FIELDS", "Option", "OwnOptions", "StudySpec", "absolute_spec",
           "option_of", "study_of"]


#: Model specs whose argument is a file (an experiment's: resolved against its folder; a flag's: against the
#: working folder), kept absolute so a resume from another folder runs the same model.
FILE_SPECS = ("scripted", "gguf", "replay")


def absolute_spec(spec: str) -> str:
    """A spec that names a file (``scripted:``, ``gguf:``, ``replay:``) with its path made absolute."""
    kind, _, arg = spec.partition(":")
    if kind in FILE_SPECS and arg and not Path(arg).is_absolute():
        return f"{kind}:{Path(arg).resolve()}"
    return spec


class OwnOptions(BaseModel):
    """What a panel model after the first carries itself (an experiment's ``models.<i>`` mapping)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token_param: Literal["max_tokens", "max_completion_tokens"] | None = None
    omit_settings: list[Literal["temperature", "top_p", "seed"]] | None = None
    prices: Prices | None = None


#: The variant kinds with a field of their own (the built-in protocols' kinds, as manifests store them); the
#: variants of any other kind a protocol declares (a plugin's) are the field ``variants``, by kind.
VARIANT_FIELDS = ("formats", "modes")

Scope = Literal["frozen", "judge"]
Decoding = Literal["constrained", "paper"]


class StudySpec(BaseModel):
    """Everything a cohort study is: cases, models with their options and prices, moderator, judges, protocols
    and their variants, run settings, seeds and replicates, and how the models are reached and run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # -- what is studied
    cases: Path | None = _opt("--cases", "cases", description="a folder of case files, a .jsonl or a glob",
                              help="folder of case files or AgentClinic .jsonl (required unless --resume)",
                              args={"type": "path"})
    limit: int | None = _opt("--limit", description="only the first N cases, in natural order",
                             help="only the first N cases, in natural order (mac-2 before mac-10; a .jsonl: its "
                                  "first N)", args={"type": "positive_int"})
    sample: int | None = _opt("--sample", description="only N cases drawn at random with the seed",
                              help="only N cases drawn at random with --seed (default 0), the same N for the same "
                                   "seed; recorded in the manifest", args={"type": "positive_int", "metavar": "N"})
    protocols: list[str] | None = _opt("--protocol", "protocol", description="run side by side",
                                       help="the protocols to run side by side, comma-separated: any with "
                                            "variants, e.g. consilium (formats), single (formats), board (modes) "
                                            "(default: consilium)", args={"type": "protocols",
                                                                          "metavar": "NAME[,NAME...]"})
    formats: list[str] | None = _opt("--formats", "formats", description="variants of the format protocols",
                                     help="formats of the protocols run in formats (consilium, single), "
                                          "comma-separated (default: both)", args={"aliases": ["--format"]})
    modes: list[str] | None = _opt("--modes", "modes", description="variants of the board",
                                   help="board modes, comma-separated (default: both)")
    variants: dict[str, list[str]] = _opt(None, "variants", default_factory=dict,
                                          description="variants of another kind a protocol declares, by kind (its "
                                                      "flag --<kind>, an experiment's <kind>: key)")
    models: list[str] | None = _opt("--model", "models", description="the panel models' specs; the first is "
                                    "--model, the others --extra-model")
    moderator: str | None = _opt("--moderator-model", "moderator_model", description="every arm's moderator",
                                 help="the moderator's model in every arm (default: the arm's panel model); not "
                                      "with --ray", args={"metavar": "SPEC"})
    # -- how it is run
    config: Path | None = _opt("--config", description="a run-settings file; each protocol takes its keys",
                               help="YAML run settings (configs/consilium.yaml); each protocol takes the keys it "
                                    "has", args={"type": "path"})
    run: dict[str, Any] = _opt(None, "run", default_factory=dict,
                               description="run settings without a field of their own (an experiment's run:)")
    seed: int | None = _opt("--seed", "run.seed", help="sampling seed, and the seed of --sample (default 0)",
                            args={"type": "int"})
    temperature: float | None = _opt("--temperature", "run.temperature", allow_inf_nan=False,
                                     help="sampling temperature, 0 to 2 (default 0)", args={"type": "number"})
    max_rounds: int | None = _opt("--max-rounds", "run.max_rounds", args={"type": "positive_int"},
                                  help="review rounds of the protocols that have them (default 5)")
    wall_limit: float | None = _opt("--wall-limit", "run.wall_limit_s", args={"type": "positive_number",
                                                                              "metavar": "SECONDS"},
                                    help="per-arm wall-clock limit; an arm past it is recorded as failed")
    role_labels: Literal["catalogue", "free"] | None = _opt("--role-labels", "run.role_labels")
    replicates: int | None = _opt(None, "replicates", ge=1, le=1000, description="each arm run this many times")
    seeds: list[int] | None = _opt(None, "seeds", description="the replicates' seeds, one each")
    # -- how it is judged
    judges: list[str] | None = _opt("--judge", "judges", description="the rubrics", help="rubric(s) to score with",
                                    args={"action": "append", "default": [], "metavar": "RUBRIC"})
    judge_model: list[str] | None = _opt("--judge-model", "judge_model", description="the judge, or a jury",
                                         help="the judge's model (needed with --judge): a spec, "
                                              "SPEC@BASE_URL[#KEY_VAR] or a model config file (a judge on its own "
                                              "server); given again, a jury (docs/judges.md, Juries)",
                                         args={"action": "append", "metavar": "SPEC"})
    scope: Scope | None = _opt("--scope")
    judge_decoding: Decoding | None = _opt("--judge-decoding")
    allow_missing_reference: bool = _opt("--allow-missing-reference", default=False, args={"action": "store_true"},
                                         help="run even when cases lack what a --judge rubric scores against "
                                              "(reference.diagnosis for nmb-diagnosis-match, …): their judgements "
                                              "are not evaluable; without it the cohort is refused before anything "
                                              "runs")
    # -- how the models are reached (the first panel model's options; an experiment's models.0)
    model_file: Path | None = _opt("--model-config", description="a model config file (its spec, its options)")
    base_url: str | None = _opt("--base-url", "models.0.base_url")
    schema_dialect: Literal["json_schema", "json_object", "none"] | None = _opt("--schema-dialect",
                                                                                "models.0.schema_dialect")
    http_client: Literal["aiohttp", "sdk"] | None = _opt("--http-client", "models.0.http_client")
    token_param: Literal["max_tokens", "max_completion_tokens"] | None = _opt("--token-param",
                                                                              "models.0.token_param")
    timeout: float | None = _opt("--timeout", "models.0.timeout_s")
    max_attempts: int | None = _opt("--max-attempts")
    retry_base_delay: float | None = _opt("--retry-base-delay", ge=0, allow_inf_nan=False)
    no_cache: bool = _opt("--no-cache", default=False)
    cache_path: Path | None = _opt("--cache-path")
    omit_settings: list[Literal["temperature", "top_p", "seed"]] | None = _opt(None, "models.0.omit_settings")
    prices: Prices | None = _opt(None, "models.0.prices")
    api_key_env: str | None = _opt(None, "models.0.api_key_env", description="the variable holding the key")
    own_options: dict[str, OwnOptions] = _opt(None, "models.N", default_factory=dict,
                                              description="panel model spec → the options it carries itself")
    # -- where and how wide (a resume may change these)
    concurrency: int | None = _opt("--concurrency", "models.0.max_concurrency", "may differ")
    out: Path | None = _opt("--out", None, "may differ", description="the folder the run folder is made in",
                            help="output folder (default runs/)", args={"type": "path"})
    shard: str | None = _opt("--shard", description="I/N: only shard I of N of the cases",
                             help="run only shard I of N of the cases (by a hash of the case id); join the N shard "
                                  "folders with `cohort merge` (docs/scale.md)",
                             args={"type": "shard", "metavar": "I/N"})
    ray: str | None = _opt("--ray", None, "may differ", description="run the cases as Ray tasks (an address)",
                           help="run the cases as Ray tasks, one partition per CPU of the cluster at ADDRESS "
                                "(default: $RAY_ADDRESS, else a local Ray); needs pip install consilium[ray]",
                           args={"nargs": "?", "const": "", "metavar": "ADDRESS"})

    @field_validator("protocols", "formats", "modes", "judges", "models", "judge_model", mode="before")
    @classmethod
    def _listed(cls, value: Any, info: ValidationInfo) -> Any:
        """One name is a list of one; of protocols and variants, ``a,b`` (a flag's form) is two (a model's spec
        or a judge's may hold a comma)."""
        if isinstance(value, str):
            split = info.field_name in ("protocols", "formats", "modes")
            return [part.strip() for part in value.split(",") if part.strip()] if split else [value]
        return list(value) if isinstance(value, tuple) else value

    @field_validator("variants", mode="before")
    @classmethod
    def _kinds(cls, value: Any) -> Any:
        """Each kind's names as a list (``a,b`` is two); a kind with a field of its own is given there."""
        if not isinstance(value, dict):
            return value
        taken = [kind for kind in value if kind in VARIANT_FIELDS]
        if taken:
            raise PydanticCustomError("variants", "{kind} is a field of its own: give it there", {"kind": taken[0]})
        return {kind: [p.strip() for p in names.split(",") if p.strip()] if isinstance(names, str) else names
                for kind, names in value.items()}

    @field_validator("models")
    @classmethod
    def _panel(cls, value: list[str] | None) -> list[str] | None:
        """Each panel model once, a file's spec absolute."""
        if value is not None and not value:
            raise UserError("models: give at least one model spec")
        return None if value is None else list(dict.fromkeys(absolute_spec(spec) for spec in value))

    @field_validator("moderator")
    @classmethod
    def _moderator(cls, value: str | None) -> str | None:
        return None if value is None else absolute_spec(value)

    @field_validator("limit", "sample", "max_rounds", "wall_limit", "timeout", "max_attempts", "concurrency")
    @classmethod
    def _positive(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UserError(f"{info.field_name}: must be positive, got {value!r}")
        return value

    @field_validator("judge_model")
    @classmethod
    def _jury(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        """A jury names each judge once (its vote would count twice): the one place this rule lives. A spec
        read back from a manifest is as it was checked (a judge's file gone is the resume's to report)."""
        context = info.context or {}
        if value is None or context.get("stored"):
            return value
        where = context.get("judge_model", "--judge-model")  # how the source names the field
        if not value:
            raise UserError(f"{where}: an empty list (name one judge model, or several for a jury)")
        refs = [parse_model_ref(text, flag=where) for text in value]
        for i in range(2, len(refs) + 1):  # a file names the judge given again by its position
            distinct(refs[:i], value[:i], f"{where}.{i - 1}" if context.get("indexed") else where)
        return [ref.record for ref in refs]

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and len(set(value)) != len(value):
            raise PydanticCustomError("seeds", "a seed is repeated (each replicate needs its own)")
        return value

    @model_validator(mode="after")
    def _replicates(self) -> StudySpec:
        if self.seeds is not None and self.replicates is not None and len(self.seeds) != self.replicates:
            raise PydanticCustomError("seeds", "{n} seeds for {r} replicates (give one seed per replicate, or "
                                      "leave one of the two out)", {"n": len(self.seeds), "r": self.replicates})
        return self

    def given(self) -> dict[str, Any]:
        """The fields given (set and not their default), by name."""
        return {name: getattr(self, name) for name in self.model_fields_set
                if getattr(self, name) != type(self).model_fields[name].get_default(call_default_factory=True)}

    def over(self, under: StudySpec) -> StudySpec:
        """This spec laid over ``under``: each field given here wins (of ``variants``, each kind given here)."""
        given = self.given()
        if "variants" in given:
            given["variants"] = {**under.variants, **given["variants"]}
        return under.model_copy(update=given)

    def chosen(self, kind: str) -> list[str] | None:
        """The variants of ``kind`` given (None: not given, every variant of the protocols of that kind)."""
        return getattr(self, kind) if kind in VARIANT_FIELDS else self.variants.get(kind)

    def study(self) -> dict[str, Any]:
        """What the study is: every field a resume must keep, as JSON (``variants`` only when given, so a study
        of the built-in kinds keeps the hash it had before the field was)."""
        study = self.model_dump(mode="json", exclude={n for n in type(self).model_fields if option_of(n).resume
                                                      == "may differ"})
        if not study["variants"]:
            del study["variants"]
        return study

    def digest(self) -> str:
        """SHA-256 of :meth:`study`, canonical JSON: two specs of the same study have the same one."""
        return hashlib.sha256(json.dumps(self.study(), sort_keys=True).encode("utf-8")).hexdigest()


def option_of(name: str) -> Option:
    """The :class:`Option` of a spec field."""
    return option_in(StudySpec.model_fields[name].json_schema_extra)


#: The fields a resume may give again with another value (the rest must say what the cohort started with).
MAY_DIFFER: tuple[str, ...] = tuple(name for name in StudySpec.model_fields if option_of(name).resume == "may differ")


def study_of(values: dict[str, Any], *, by: Literal["flag", "keyword"] = "keyword") -> StudySpec:
    """A spec from keywords (the API's) or flags (``by``: how an error names a field); a bad value is one line
    naming it."""
    unknown = [name for name in values if name not in StudySpec.model_fields]
    if unknown:
        raise UserError(f"{unknown[0]}: not a setting of a study (it takes {', '.join(StudySpec.model_fields)})")
    try:
        return StudySpec.model_validate(values, context={"judge_model": "judge_model" if by == "keyword"
                                                         else "--judge-model"})
    except ValidationError as exc:
        raise UserError(first_error(exc)) from None
