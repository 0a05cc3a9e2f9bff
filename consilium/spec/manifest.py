"""A cohort's manifest, its lock and what a resume may reuse.

The manifest is written when a cohort starts (``status: running``) and completed at the end
(``completed``, or ``aborted`` with the reason), so a killed cohort always has one. It holds every
setting the cohort ran with — never a secret: API keys come from the environment, and a base URL's
credentials are masked — so ``cohort --resume RUN_DIR`` alone finishes the same cohort
(docs/cohorts.md, "Resuming"). Version 1.2 records where the traces go (``layout``); a 1.1 manifest
is upgraded on read to ``layout: flat``, the one folder per model it was made with. Version 1.3 runs
several protocols side by side: ``protocols``, and ``configs`` by protocol (``variants`` are those asked
for, each protocol running its own); a 1.2 manifest (one ``protocol`` and its ``config``) is upgraded on
read to a cohort of one. A 1.3 manifest may also record the experiment file the cohort was started from
(``settings.experiment``: its path, SHA-256, resolved content and the flags that overrode it) and the seeds
of its replicates (``settings.seeds``); both are optional, absent from a cohort started otherwise. Its
``settings.model`` may also hold the model options a resume must build the models with again (``token_param``,
``omit_settings``, ``prices`` and the spec they price); absent, as in a manifest written before them, the
models are built as the defaults say (the model name's request rule, no prices); ``settings.model_options``
holds the same for each later panel model that carries its own (an experiment file's ``models.<i>``).
Version 1.4 stores the study spec the cohort was started from (consilium/spec/study.py: what was given, by
flags, an experiment file or the API's keywords) and its hash (``spec_hash``, SHA-256 of what a resume must
keep); a 1.3 manifest is upgraded on read with none (``spec: null``): its resume holds each field to the
settings it ran with.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.registry import get_protocol
from consilium.models.pricing import Prices
from consilium.runfolder.layout import MANIFEST
from consilium.spec.manifest_upgrades import MANIFEST_STEPS, settings_before_their_fields
from consilium.spec.study import StudySpec
from consilium.traces.io import _git_revision, package_versions
from consilium.traces.versions import upgrade

__all__ = ["MANIFEST", "CaseSample", "CohortManifest", "CohortSettings", "ExperimentRecord", "ModelSettings",
           "OwnModelOptions", "load_manifest", "new_manifest", "read_manifest", "write_cohort_manifest"]

COHORT_MANIFEST_VERSION = "1.4"


class ModelSettings(BaseModel):
    """How the models were reached: everything but the key (from the environment on resume)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(default=None, description="credentials masked as ***")
    schema_dialect: str | None = None
    http_client: str | None = None
    max_concurrency: int | None = None
    timeout: float | None = None
    max_attempts: int | None = None
    retry_base_delay: float | None = None
    no_cache: bool = False
    cache_path: str | None = None
    api_key_env: str | None = Field(default=None, description="the variable holding the key (never the key)")
    token_param: str | None = Field(default=None, description="openai: the max-tokens parameter sent (reasoning "
                                    "models); None: the model name's rule")
    omit_settings: list[str] | None = Field(default=None, description="sampling settings left out of every "
                                            "request; None: the model name's rule")
    prices: Prices | None = Field(default=None, description="USD per 1M tokens of the model prices_spec names; "
                                  "None: unpriced")
    prices_spec: str | None = Field(default=None, description="the spec the prices are of (the first panel model)")


class OwnModelOptions(BaseModel):
    """What one panel model carries itself, beside the cohort's options: its request shape and prices."""

    model_config = ConfigDict(extra="forbid")

    token_param: str | None = None
    omit_settings: list[str] | None = None
    prices: Prices | None = Field(default=None, description="USD per 1M tokens of this model; None: unpriced")


class ExperimentRecord(BaseModel):
    """The experiment file a cohort was started from: what it said, so a reader knows exactly what ran."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="the file, absolute")
    sha256: str = Field(description="of the file's bytes when the cohort started (a resume refuses another)")
    content: dict[str, Any] = Field(description="the file as read, its paths resolved (cases, model files)")
    overridden: list[str] = Field(default_factory=list, description="flags given beside it that replaced "
                                  "what it set")


class CaseSample(BaseModel):
    """``cohort --sample N``: N of the cases drawn at random with ``seed`` (consilium/cohort/cases.py
    ``select_cases``); a resume runs the ones drawn, which ``case_hashes`` lists."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=1, description="how many cases were drawn")
    seed: int = Field(description="the seed they were drawn with (the cohort's --seed)")


class CohortSettings(BaseModel):
    """What the cohort runs: cases, models, protocols with their variants and run settings, judges."""

    model_config = ConfigDict(extra="forbid")

    protocols: list[str] = Field(min_length=1, description="run side by side, each on every case and model")
    variants: list[str] = Field(description="the variants asked for (formats, modes): each protocol runs those "
                                "that are its own (variants_of)")
    models: list[str]
    moderator_model: str | None = Field(default=None, description="every arm's moderator (--moderator-model); "
                                        "None: each arm's panel model")
    cases: str = Field(description="the --cases path, absolute")
    limit: int | None = Field(default=None, description="--limit: the first N cases, in natural order")
    sample: CaseSample | None = Field(default=None, description="--sample: a seeded random sample of the cases")
    case_hashes: dict[str, str] = Field(description="case id → content hash, in cohort order")
    configs: dict[str, dict[str, Any]] = Field(description="protocol → its run settings (ConsiliumConfig, …)")
    judges: list[str] = []
    judge_model: str | None = None
    jury_models: list[str] = Field(default=[], description="the jury's other judges (--judge-model given again); "
                                   "judge_model is its first")
    judge_names: list[str] = Field(
        default=[], description="each judge's identity when the cohort started, judge_model's then jury_models' (its "
                                "spec, or SPEC@BASE_URL: consilium/models/refs.py); a resume or an ablation refuses a "
                                "config file that now names another judge. Empty in a cohort made before it was kept")
    judge_scope: Literal["frozen", "judge"] | None = Field(
        default=None, description="the four-decision scope protocol (--scope); None: each case's default")
    judge_decoding: Literal["constrained", "paper"] | None = Field(
        default=None, description="the judges' decoding order (--judge-decoding; consilium/judges/decoding.py); "
                                  "None: each rubric's pin, else each judge backend's default")
    concurrency: int
    model: ModelSettings
    model_options: dict[str, OwnModelOptions] | None = Field(
        default=None, description="panel model spec → the options it carries itself (an experiment's models.<i>); "
        "None: every model with the cohort's options")
    shard: str | None = Field(default=None, description='"I/N": the folder holds shard I of N of the cases '
                              "(cohort --shard; consilium/cohort/shard.py); None: every case")
    seeds: list[int] | None = Field(default=None, description="one per replicate, each arm run once with each; "
                                    "None: not run in replicates (each arm once, with its run settings' seed)")
    experiment: ExperimentRecord | None = Field(default=None, description="the --experiment file, if any")

    @model_validator(mode="after")
    def _by_protocol(self) -> CohortSettings:
        """Every protocol of the cohort has its run settings, and nothing else has."""
        if sorted(self.configs) != sorted(self.protocols):
            raise PydanticCustomError("by_protocol", "configs must name each protocol once ({protocols})",
                                      {"protocols": ", ".join(self.protocols)})
        return self

    def variants_of(self, protocol: str) -> list[str]:
        """The variants the protocol runs in: those asked for that are its own."""
        own = get_protocol(protocol, flag="settings.protocols").variants
        return [variant for variant in self.variants if variant in own]


class CohortManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1.4"] = "1.4"
    kind: Literal["cohort"] = "cohort"
    run_id: str
    layout: Literal["sharded", "flat"] = Field(
        default="sharded", description="arms/<model>/<2 hex of sha256(case id)>/ (sharded) or arms/<model>/ (flat)")
    status: Literal["running", "completed", "aborted"]
    created_at: str
    updated_at: str
    command: list[str]
    settings: CohortSettings
    # Kept from the 1.0 manifest's shape, for readers of that one: the first protocol's.
    config: dict[str, Any]
    seed: int
    git_revision: str | None
    versions: dict[str, str]
    traces: list[str] = Field(default_factory=list, description="trace files, relative to the run folder")
    counts: dict[str, int] = Field(default_factory=dict, description="arms: completed, failed, resumed")
    error: str | None = Field(default=None, description="why the cohort was aborted")
    spec: StudySpec | None = Field(default=None, description="the study as given (None: a cohort made before "
                                   "the spec was kept)")
    spec_hash: str | None = Field(default=None, description="SHA-256 of the spec's study (StudySpec.digest)")

    @field_validator("spec_hash")
    @classmethod
    def _hashed(cls, value: str | None, info: ValidationInfo) -> str | None:
        """The hash is the spec's: a spec edited by hand is not the study the cohort ran."""
        spec = info.data.get("spec")
        if (spec.digest() if spec is not None else None) != value:
            raise PydanticCustomError("spec_hash", "does not match the spec (the spec was changed after the cohort "
                                      "started)")
        return value


def write_cohort_manifest(run_dir: Path, manifest: CohortManifest) -> Path:
    manifest = manifest.model_copy(update={"updated_at": datetime.now(UTC).isoformat()})
    return write_text_atomic(run_dir / MANIFEST, manifest.model_dump_json(indent=2) + "\n")


def new_manifest(run_id: str, command: list[str], settings: CohortSettings, seed: int,
                 spec: StudySpec | None = None) -> CohortManifest:
    now = datetime.now(UTC).isoformat()
    first = settings.protocols[0]
    config = {**settings.configs[first], "protocol": first, "variants": settings.variants,
              "models": settings.models, "cases": settings.cases}
    return CohortManifest(run_id=run_id, status="running", created_at=now, updated_at=now, command=command,
                          settings=settings, config=config, seed=seed, git_revision=_git_revision(),
                          versions=package_versions(), spec=spec, spec_hash=spec.digest() if spec else None)


def read_manifest(run_dir: Path) -> CohortManifest:
    """The manifest of a cohort folder, for ``--resume``; one line naming what is wrong otherwise."""
    path = run_dir / MANIFEST
    if not run_dir.is_dir():
        raise UserError(f"--resume: {run_dir}: no such run folder")
    if not path.is_file():
        raise UserError(f"--resume: {path}: no manifest (not a cohort folder, or made by a consilium older "
                        "than 0.2 that wrote it only at the end)")
    return load_manifest(path, what="only cohorts resume")


def load_manifest(path: Path, *, what: str = "not a cohort folder") -> CohortManifest:
    """A cohort manifest read and upgraded to this version; one line naming the file and field otherwise
    (``what`` says why only a cohort's will do)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path}: not a readable manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != "cohort":
        raise UserError(f"{path}: kind: not a cohort manifest ({what})")
    if data.get("schema_version") not in (*MANIFEST_STEPS, COHORT_MANIFEST_VERSION):
        raise UserError(f"{path}: schema_version: {data.get('schema_version')!r} is not supported "
                        f"(this consilium reads {', '.join([*MANIFEST_STEPS, COHORT_MANIFEST_VERSION])})")
    data = upgrade(data, current=COHORT_MANIFEST_VERSION, steps=MANIFEST_STEPS, where=str(path))
    data = settings_before_their_fields(data)
    try:
        return CohortManifest.model_validate(data, context={"stored": True})
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc)}") from None
