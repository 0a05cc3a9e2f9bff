"""A cohort ready to run, from a study spec (a new cohort); a resumed one is planned in consilium/cohort/resume.py.

The plan holds the cases, each protocol's variants and run settings, the judges and how the models are
reached; nothing is written while it is made, so a bad field or file leaves no run folder. How the variants and
run settings are layered (experiment, --config file, the spec's fields) is in consilium/cohort/configs.py.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from consilium.cases import Case
from consilium.cohort.cases import case_places, check_references, cohort_images, load_cohort_files, select_cases
from consilium.cohort.configs import given_variants, protocol_configs
from consilium.cohort.protocols import cohort_variants, protocol_list
from consilium.cohort.study_sources import Sourced, with_experiment
from consilium.errors import UserError
from consilium.judges.answers import Scope, check_scope
from consilium.judges.rubric import Rubric, load_rubric
from consilium.models.factory import ModelOptions
from consilium.models.refs import parse_model_ref
from consilium.redact import redact_url
from consilium.spec.connection import connection_options, default_concurrency, model_file
from consilium.spec.manifest import CaseSample, CohortManifest, CohortSettings, ModelSettings, OwnModelOptions
from consilium.spec.study import OwnOptions, StudySpec, absolute_spec
from consilium.traces.config import RunConfig
from consilium.traces.io import new_run_id

__all__ = ["Plan", "new_plan", "own_model_options", "refuse_on_ray"]


@dataclass
class Plan:
    """A cohort ready to run: new, or resumed from its manifest."""

    run_dir: Path
    settings: CohortSettings
    cases: list[Case]
    configs: dict[str, RunConfig]  # by protocol, in the cohort's order
    rubrics: list[Rubric]
    options: ModelOptions
    spec: StudySpec  # the study, as given (and, resumed, as the manifest keeps it)
    manifest: CohortManifest | None = None  # the resumed cohort's
    scope: Scope | None = None  # the four-decision scope protocol (--scope)
    images: dict[str, tuple[str, ...]] = field(default_factory=dict)  # case id → its slide images (boards)
    # spec → the options of a panel model that carries its own (settings.model_options); the others: ``options``
    model_options: dict[str, ModelOptions] = field(default_factory=dict)

    def options_for(self, spec: str) -> ModelOptions:
        """What the model of ``spec`` is built with."""
        return self.model_options.get(spec, self.options)


def _rubric_ref(name: str) -> str:
    """How a judge is recorded: a shipped rubric by name, a rubric file by absolute path."""
    path = Path(name)
    return str(path.resolve()) if path.suffix in (".yaml", ".yml") and path.exists() else name


def _replicate_seeds(spec: StudySpec, base_seed: int) -> list[int] | None:
    """The seed of each replicate: ``seeds``, else ``base_seed + i`` for i < ``replicates``; None when neither is
    given (each arm runs once, with its run settings' seed)."""
    if spec.seeds is not None:
        return list(spec.seeds)
    return None if spec.replicates is None else [base_seed + i for i in range(spec.replicates)]


def _file_options(sourced: Sourced) -> dict[str, object]:
    """What the spec sets of the first panel model that no flag sets (an experiment's ``models.0``): its
    request shape, prices and key variable, as model options."""
    spec = sourced.spec
    options: dict[str, object] = {}
    if spec.omit_settings is not None:
        options["omit_settings"] = tuple(spec.omit_settings)
    if spec.prices is not None:  # the first model's (the plan prices that spec alone)
        options["prices"] = spec.prices
    if spec.api_key_env:
        key = os.environ.get(spec.api_key_env)
        if not key:
            where = f"{sourced.experiment_path}: models.0." if "api_key_env" in sourced.from_file else ""
            raise UserError(f"{where}api_key_env: ${spec.api_key_env} is not set")
        options["api_key"] = key
    return options


def own_records(own: dict[str, OwnOptions], shared: ModelOptions) -> dict[str, OwnModelOptions]:
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


def new_plan(given: StudySpec, experiment: Path | None = None) -> Plan:
    """The cohort ``given`` describes, laid over the experiment file, if any; nothing is written."""
    sourced = with_experiment(given, experiment)
    spec = sourced.spec
    if spec.cases is None:
        raise UserError("--cases: required (a folder of case files or a .jsonl file), or --resume RUN_DIR")
    protocols = protocol_list(",".join(spec.protocols), flag="--protocol") if spec.protocols else ["consilium"]
    variants = cohort_variants(protocols, *given_variants(sourced, protocols))
    config_file = model_file(spec.model_file)
    specs = spec.models or [absolute_spec(config_file.spec if config_file else "embedded")]
    moderator = spec.moderator
    # the moderator, if any, assigns the roles; else the panel's models
    configs = protocol_configs(protocols, sourced, [moderator] if moderator else specs)
    sample = None if spec.sample is None else CaseSample(n=spec.sample, seed=configs[protocols[0]].seed)
    everything = load_cohort_files(spec.cases)
    found = select_cases(everything, limit=spec.limit, sample=sample.n if sample else None,
                         seed=sample.seed if sample else 0)
    cases = [case for case, _ in found]
    judges = spec.judges or []
    if judges and not spec.judge_model:
        raise UserError("--judge-model: a judged cohort needs a judge model (never the panel's by default)")
    # each judge as the manifest records it (the spec has refused one given twice)
    jury = [parse_model_ref(record, flag="--judge-model") for record in spec.judge_model or []]
    rubrics = [load_rubric(name, flag="--judge") for name in judges]
    chosen = {case.id for case in cases}
    places = [(where, case) for where, case in case_places(spec.cases, [case for case, _ in everything])
              if case.id in chosen]
    check_scope(spec.scope, rubrics, places)
    for line in check_references(rubrics, places, allow=spec.allow_missing_reference):
        print(line, file=sys.stderr)
    # concurrency: model calls in flight across all arms, by default what suits the slowest backend.
    concurrency = (spec.concurrency or (config_file.max_concurrency if config_file else None)
                   or default_concurrency(*specs, *([moderator] if moderator else [])))
    options = connection_options(
        spec.model_file, priced=specs[0], base_url=spec.base_url, schema_dialect=spec.schema_dialect,
        http_client=spec.http_client, timeout=spec.timeout, cache_path=spec.cache_path, token_param=spec.token_param,
        no_cache=spec.no_cache, max_attempts=spec.max_attempts, retry_base_delay=spec.retry_base_delay,
        max_concurrency=concurrency, prices_spec=specs[0], **_file_options(sourced))
    for ref in jury:  # a judge's own key variable unset: refused before anything is written
        ref.options(options)
    settings = CohortSettings(
        protocols=protocols, variants=list(dict.fromkeys(v for chosen in variants.values() for v in chosen)),
        models=specs, moderator_model=moderator, cases=str(spec.cases.resolve()), limit=spec.limit, sample=sample,
        case_hashes={c.id: c.content_hash() for c in cases},
        configs={name: config.model_dump(mode="json") for name, config in configs.items()},
        judges=[_rubric_ref(name) for name in judges],
        judge_model=jury[0].record if jury else None, jury_models=[ref.record for ref in jury[1:]],
        judge_names=[ref.name for ref in jury], judge_scope=spec.scope, judge_decoding=spec.judge_decoding,
        concurrency=concurrency,
        model=ModelSettings(
            base_url=redact_url(options.base_url) if options.base_url else None,
            schema_dialect=options.schema_dialect, http_client=options.http_client,
            max_concurrency=options.max_concurrency, timeout=options.timeout_s,
            max_attempts=options.retry.max_attempts, retry_base_delay=options.retry.base_delay_s,
            no_cache=spec.no_cache, cache_path=str(spec.cache_path.resolve()) if spec.cache_path else None,
            api_key_env=config_file.api_key_env if config_file else spec.api_key_env,
            token_param=options.token_param,
            omit_settings=list(options.omit_settings) if options.omit_settings is not None else None,
            prices=options.prices, prices_spec=options.prices_spec if options.prices is not None else None),
        seeds=_replicate_seeds(spec, configs[protocols[0]].seed), experiment=sourced.record,
        model_options=own_records({k: v for k, v in spec.own_options.items() if k != specs[0]}, options) or None)
    refuse_on_ray(spec, settings)
    return Plan(run_dir=(spec.out or Path("runs")) / new_run_id("cohort"), settings=settings, cases=cases,
                configs=configs, rubrics=rubrics, options=options, spec=spec, scope=spec.scope,
                model_options=own_model_options(settings.model_options, options),
                images=cohort_images(protocols, found))


def refuse_on_ray(spec: StudySpec, settings: CohortSettings) -> None:
    """Ray's workers build every model with the cohort's one set of options, the panel's (a moderator's
    model of its own is opened by no worker)."""
    if spec.ray is not None and settings.moderator_model:
        raise UserError("--moderator-model: not with --ray (each Ray worker opens the panel models alone); run "
                        "the cohort in this process, or in shards (--shard)")
    if spec.ray is not None and settings.model_options:
        raise UserError(f"--ray: panel model {next(iter(settings.model_options))} carries its own options "
                        "(settings.model_options), which Ray workers do not take yet; run this cohort without --ray")
