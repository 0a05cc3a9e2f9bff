"""A cohort ready to run, from the command line (a new cohort) or from its manifest (``--resume``).

The plan holds the cases, each protocol's variants and run settings, the judges and how the models are
reached; nothing is written while it is made, so a bad flag or file leaves no run folder. How the
variants and run settings are layered (experiment, --config file, flags) is in consilium/cli/cohort_configs.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from consilium.cases import Case
from consilium.cli.cohort_configs import config_file_settings, given_variants, protocol_configs
from consilium.cli.cohort_experiment import apply_experiment, own_model_options, own_records
from consilium.cli.concurrency import default_concurrency
from consilium.cli.options import (
    ModelConfigFile,
    model_options,
    model_spec,
    run_config,
)
from consilium.cohort.cases import (
    case_places,
    cases_exist,
    check_references,
    cohort_images,
    load_cohort_files,
    select_cases,
)
from consilium.cohort.experiment import FILE_SPECS, load_experiment, replicate_seeds
from consilium.cohort.protocols import cohort_variants, split_settings
from consilium.cohort.resume import base_url_for_resume, refuse_conflicts
from consilium.datafiles import load_data_file
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol
from consilium.judges.answers import Scope, check_scope
from consilium.judges.rubric import Rubric, load_rubric
from consilium.models.factory import ModelOptions
from consilium.models.refs import held_to, parse_refs
from consilium.redact import redact_url
from consilium.spec.manifest import CaseSample, CohortManifest, CohortSettings, ModelSettings, read_manifest
from consilium.traces.config import RunConfig
from consilium.traces.io import new_run_id

__all__ = ["FILE_SPECS", "Plan", "absolute_spec", "new_plan", "resume_plan"]


@dataclass
class Plan:
    """A cohort ready to run: new, or resumed from its manifest."""

    run_dir: Path
    settings: CohortSettings
    cases: list[Case]
    configs: dict[str, RunConfig]  # by protocol, in the cohort's order
    rubrics: list[Rubric]
    options: ModelOptions
    manifest: CohortManifest | None = None  # the resumed cohort's
    scope: Scope | None = None  # the four-decision scope protocol (--scope)
    images: dict[str, tuple[str, ...]] = field(default_factory=dict)  # case id → its slide images (boards)
    # spec → the options of a panel model that carries its own (settings.model_options); the others: ``options``
    model_options: dict[str, ModelOptions] = field(default_factory=dict)

    def options_for(self, spec: str) -> ModelOptions:
        """What the model of ``spec`` is built with."""
        return self.model_options.get(spec, self.options)


def absolute_spec(spec: str) -> str:
    """A spec that names a file (``scripted:``, ``gguf:``, ``replay:``) with its path made absolute, so a
    resume from another folder runs the same model, never a like-named file there."""
    kind, _, arg = spec.partition(":")
    if kind in FILE_SPECS and arg and not Path(arg).is_absolute():
        return f"{kind}:{Path(arg).resolve()}"
    return spec


def _rubric_ref(name: str) -> str:
    """How a judge is recorded: a shipped rubric by name, a rubric file by absolute path."""
    path = Path(name)
    return str(path.resolve()) if path.suffix in (".yaml", ".yml") and path.exists() else name


def _model_file(args: argparse.Namespace) -> ModelConfigFile | None:
    path = getattr(args, "model_config", None)
    return load_data_file(path, ModelConfigFile, "model config") if path is not None else None


def new_plan(args: argparse.Namespace) -> Plan:
    setup = apply_experiment(args)  # what the file sets, as the flags it stands for (a flag given wins)
    experiment = setup.experiment
    if args.cases is None:
        raise UserError("--cases: required (a folder of case files or a .jsonl file), or --resume RUN_DIR")
    protocols: list[str] = args.protocol or experiment.protocols
    variants = cohort_variants(protocols, *given_variants(args, experiment if args.experiment else None,
                                                          protocols))
    specs = list(dict.fromkeys(absolute_spec(spec) for spec in [model_spec(args), *args.extra_model]))
    moderator = absolute_spec(args.moderator_model) if args.moderator_model else None
    # the moderator, if any, assigns the roles; else the panel's models
    configs = protocol_configs(protocols, args, experiment, [moderator] if moderator else specs)
    sample = _sample(args, configs[protocols[0]].seed)
    everything = load_cohort_files(args.cases)
    found = select_cases(everything, limit=args.limit, sample=sample.n if sample else None,
                         seed=sample.seed if sample else 0)
    cases = [case for case, _ in found]
    judges = args.judge or experiment.judges
    if judges and not args.judge_model:
        raise UserError("--judge-model: a judged cohort needs a judge model (never the panel's by default)")
    # Each judge as the manifest records it (consilium/models/refs.py), the same judge twice refused.
    jury = parse_refs([args.judge_model, *getattr(args, "jury_models", [])], flag="--judge-model") \
        if args.judge_model else []
    rubrics = [load_rubric(name, flag="--judge") for name in judges]
    places = case_places(args.cases, [case for case, _ in everything])
    chosen = {case.id for case in cases}
    places = [(where, case) for where, case in places if case.id in chosen]
    check_scope(args.scope, rubrics, places)
    for line in check_references(rubrics, places, allow=bool(getattr(args, "allow_missing_reference", False))):
        print(line, file=sys.stderr)
    # --concurrency: model calls in flight across all arms, by default what suits the slowest backend.
    model_file = _model_file(args)
    concurrency = (args.concurrency or (model_file.max_concurrency if model_file else None)
                   or default_concurrency(*specs, *([moderator] if moderator else [])))
    options = model_options(args, max_concurrency=concurrency, prices_spec=specs[0],  # the spec made absolute
                            **setup.options)
    for ref in jury:  # a judge's own key variable unset: refused before anything is written
        ref.options(options)
    settings = CohortSettings(
        protocols=protocols, variants=list(dict.fromkeys(v for chosen in variants.values() for v in chosen)),
        models=specs, moderator_model=moderator, cases=str(args.cases.resolve()), limit=args.limit, sample=sample,
        case_hashes={c.id: c.content_hash() for c in cases},
        configs={name: config.model_dump(mode="json") for name, config in configs.items()},
        judges=[_rubric_ref(name) for name in judges],
        judge_model=jury[0].record if jury else None, jury_models=[ref.record for ref in jury[1:]],
        judge_names=[ref.name for ref in jury],
        judge_scope=args.scope,
        judge_decoding=getattr(args, "judge_decoding", None), concurrency=concurrency,
        model=ModelSettings(
            base_url=redact_url(options.base_url) if options.base_url else None,
            schema_dialect=options.schema_dialect, http_client=options.http_client,
            max_concurrency=options.max_concurrency, timeout=options.timeout_s,
            max_attempts=options.retry.max_attempts, retry_base_delay=options.retry.base_delay_s,
            no_cache=bool(args.no_cache), cache_path=str(args.cache_path.resolve()) if args.cache_path else None,
            api_key_env=model_file.api_key_env if model_file else setup.api_key_env,
            token_param=options.token_param,
            omit_settings=list(options.omit_settings) if options.omit_settings is not None else None,
            prices=options.prices, prices_spec=options.prices_spec if options.prices is not None else None),
        seeds=replicate_seeds(experiment, configs[protocols[0]].seed), experiment=setup.record,
        model_options=own_records({absolute_spec(k): v for k, v in setup.own.items() if absolute_spec(k) != specs[0]},
                                  options) or None)
    _refuse_on_ray(args, settings)
    return Plan(run_dir=(args.out or Path("runs")) / new_run_id("cohort"), settings=settings, cases=cases,
                configs=configs, rubrics=rubrics, options=options, scope=args.scope,
                model_options=own_model_options(settings.model_options, options),
                images=cohort_images(protocols, found))


def _refuse_conflicts(args: argparse.Namespace, manifest: CohortManifest, run_dir: Path) -> None:
    """Parse what the resume's command line gives again (a malformed flag or file is reported as for a new
    cohort), then refuse what differs from the manifest."""
    s = manifest.settings
    experiment = load_experiment(args.experiment) if args.experiment else None
    given, where = given_variants(args, experiment, s.protocols)
    variants = None
    if given:
        resolved = cohort_variants(s.protocols, given, where)
        variants = {name: v for name, v in resolved.items() if get_protocol(name).variant_flag in given}
    specs = None
    if args.model or args.model_config or args.extra_model:
        first = absolute_spec(model_spec(args)) if (args.model or args.model_config) else s.models[0]
        extra = [absolute_spec(spec) for spec in args.extra_model]
        specs = list(dict.fromkeys([first, *extra])) if extra else [first, *s.models[1:]]
    config_values = None
    if args.config is not None:
        config_values = config_file_settings(args.config)
        split_settings(config_values, s.protocols, f"{args.config}: ")
        for name in s.protocols:
            run_config(get_protocol(name).config_model, args.config, {}, known_only=True)
    given_options = model_options(args, max_concurrency=s.concurrency) if args.model_config else None
    refuse_conflicts(args, manifest, run_dir, protocols=args.protocol, variants=variants, specs=specs,
                     experiment=experiment, config_values=config_values, model_options=given_options,
                     moderator=absolute_spec(args.moderator_model) if args.moderator_model else None)


def resume_plan(args: argparse.Namespace) -> Plan:
    # `--resume .` (or `..`): the folder's own name is the cohort's run id, as when named by its path.
    run_dir: Path = args.resume.resolve() if args.resume.name in ("", "..") else args.resume
    manifest = read_manifest(run_dir)
    _refuse_conflicts(args, manifest, run_dir)
    if getattr(args, "judge_model", None) is not None:
        # The manifest's judges (else refused above), each perhaps reached by a renamed key variable: the manifest
        # keeps the records given, so that the next resume reads the new names.
        records = {"judge_model": args.judge_model, "jury_models": list(getattr(args, "jury_models", []))}
        manifest = manifest.model_copy(update={"settings": manifest.settings.model_copy(update=records)})
    s = manifest.settings
    if not cases_exist(Path(s.cases)):
        raise UserError(f"--resume: the cohort's cases, {s.cases}, are gone; a resumed cohort runs the cases it "
                        "started with")
    found = _started_with(load_cohort_files(Path(s.cases)), s)
    cases = [case for case, _ in found]
    hashes = {c.id: c.content_hash() for c in cases}
    for case_id in dict.fromkeys([*s.case_hashes, *hashes]):
        if hashes.get(case_id) != s.case_hashes.get(case_id):
            what = "is new" if case_id not in s.case_hashes else "is gone" if case_id not in hashes else "changed"
            raise UserError(f"--resume: {s.cases}: case {case_id!r} {what} since the cohort started; a resumed "
                            "cohort runs the cases it started with")
    configs = {name: get_protocol(name, flag=f"{run_dir}/manifest.json: settings.protocols").config_model
               .model_validate(s.configs[name]) for name in s.protocols}
    rubrics = [load_rubric(name, flag="--judge") for name in s.judges]
    check_scope(s.judge_scope, rubrics, case_places(Path(s.cases), cases))
    kept = argparse.Namespace(
        model_config=None, base_url=base_url_for_resume(args, manifest, os.environ.get("OPENAI_BASE_URL")),
        schema_dialect=s.model.schema_dialect, http_client=s.model.http_client, token_param=s.model.token_param,
        concurrency=s.model.max_concurrency,
        timeout=s.model.timeout or s.configs[s.protocols[0]].get("timeout_s"),
        max_attempts=s.model.max_attempts, retry_base_delay=s.model.retry_base_delay, no_cache=s.model.no_cache,
        cache_path=Path(s.model.cache_path) if s.model.cache_path else None)
    # The options the arms ran with that have no flag: the request shape of a reasoning model, the prices.
    overrides: dict[str, object] = {
        "max_concurrency": s.concurrency, "prices": s.model.prices, "prices_spec": s.model.prices_spec,
        "omit_settings": tuple(s.model.omit_settings) if s.model.omit_settings is not None else None}
    if s.model.api_key_env:
        key = os.environ.get(s.model.api_key_env)
        if not key:
            raise UserError(f"--resume: the cohort's key comes from ${s.model.api_key_env}, which is not set")
        overrides["api_key"] = key
    options = model_options(kept, **overrides)
    if s.judge_model:  # each judge as the manifest keeps it, still the judge it was, its key variable set: else
        where = f"--resume: {run_dir}/manifest.json: judge"  # refused before any arm runs
        refs = parse_refs([s.judge_model, *s.jury_models], flag=where)
        held_to(refs, s.judge_names, where,
                "a resumed cohort keeps its judges: restore the file, or start a new cohort")
        for ref in refs:
            ref.options(options)
    _refuse_on_ray(args, s)
    return Plan(run_dir=run_dir, settings=s, cases=cases, configs=configs, rubrics=rubrics, options=options,
                manifest=manifest, scope=s.judge_scope, images=cohort_images(s.protocols, found),
                model_options=own_model_options(s.model_options, options))


def _started_with(everything: list[tuple[Case, Path | None]], s: CohortSettings) -> list[tuple[Case, Path | None]]:
    """The cases a resumed cohort runs: of a cohort that took some of its cases (``--limit``, ``--sample``), the
    ones its manifest lists, by id, in its order (drawing again would draw others once a case is added to or
    removed from the folder, and call one still there gone); of one that took them all, all of them. The
    caller compares their content with the manifest's, so a case gone or changed is refused either way."""
    if s.limit is None and s.sample is None:
        return everything
    by_id = {case.id: (case, file) for case, file in everything}
    return [by_id[case_id] for case_id in s.case_hashes if case_id in by_id]


def _sample(args: argparse.Namespace, seed: int) -> CaseSample | None:
    """``--sample N``: N cases drawn with the cohort's seed (``--seed``, else its run settings' seed)."""
    n = getattr(args, "sample", None)
    return None if n is None else CaseSample(n=n, seed=seed)


def _refuse_on_ray(args: argparse.Namespace, settings: CohortSettings) -> None:
    """Ray's workers build every model with the cohort's one set of options."""
    if getattr(args, "ray", None) is not None and settings.model_options:
        raise UserError(f"--ray: panel model {next(iter(settings.model_options))} carries its own options "
                        "(settings.model_options), which Ray workers do not take yet; run this cohort without --ray")
