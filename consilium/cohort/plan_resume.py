"""A resumed cohort's plan: the manifest's study, what is given again held to it (consilium/cohort/resume.py),
its cases checked to be the ones it started with, and its models reached as they were."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from consilium.cases import Case
from consilium.cohort.cases import case_places, cases_exist, cohort_images, load_cohort_files
from consilium.cohort.configs import config_file_settings, given_variants
from consilium.cohort.plan import Plan, own_model_options, refuse_on_ray
from consilium.cohort.protocols import cohort_variants, split_settings
from consilium.cohort.resume import base_url_for_resume, refuse_conflicts
from consilium.cohort.study_sources import Sourced, study_from_experiment
from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol
from consilium.judges.answers import check_scope
from consilium.judges.rubric import load_rubric
from consilium.models.refs import held_to, parse_refs
from consilium.spec.connection import connection_options, model_file
from consilium.spec.manifest import CohortManifest, CohortSettings, read_manifest
from consilium.spec.run_settings import run_config
from consilium.spec.study import StudySpec, absolute_spec

__all__ = ["resume_plan"]


def _refuse_changes(given: StudySpec, experiment: Path | None, manifest: CohortManifest, run_dir: Path) -> None:
    """Parse what is given again (a malformed field or file is reported as for a new cohort), then refuse what
    differs from the cohort."""
    s = manifest.settings
    sourced = Sourced(given)
    if experiment is not None:
        _, file = study_from_experiment(experiment)
        sourced = Sourced(given, file, None, set(), str(experiment))
    given_flags, where = given_variants(sourced, s.protocols)
    variants = None
    if given_flags:
        resolved = cohort_variants(s.protocols, given_flags, where)
        variants = {name: v for name, v in resolved.items() if get_protocol(name).variant_flag in given_flags}
    config_values = None
    if given.config is not None:
        config_values = config_file_settings(given.config)
        split_settings(config_values, s.protocols, f"{given.config}: ")
        for name in s.protocols:
            run_config(get_protocol(name).config_model, given.config, {}, known_only=True)
    if given.model_file is not None and given.models is None:  # the file names the first panel model
        config_file = model_file(given.model_file)
        given = given.model_copy(update={"models": [absolute_spec(config_file.spec)] if config_file else None})
    file_options = connection_options(given.model_file, priced=None, base_url=given.base_url,
                                      schema_dialect=given.schema_dialect, http_client=given.http_client,
                                      timeout=given.timeout, token_param=given.token_param,
                                      max_concurrency=s.concurrency) if given.model_file else None
    refuse_conflicts(given, manifest, run_dir, experiment=sourced if experiment is not None else None,
                     variants=variants, config_values=config_values, model_options=file_options)


def resume_plan(given: StudySpec, run_dir: Path, experiment: Path | None = None) -> Plan:
    """The plan that finishes the cohort in ``run_dir`` with its own study; ``given`` (and ``experiment``) may
    say it again, and may change only what a resume may (consilium/spec/study.py ``MAY_DIFFER``)."""
    # `--resume .` (or `..`): the folder's own name is the cohort's run id, as when named by its path.
    run_dir = run_dir.resolve() if run_dir.name in ("", "..") else run_dir
    manifest = read_manifest(run_dir)
    _refuse_changes(given, experiment, manifest, run_dir)
    update: dict[str, Any] = {}
    if given.judge_model is not None:
        # The manifest's judges (else refused above), each perhaps reached by a renamed key variable: the manifest
        # keeps the records given, so that the next resume reads the new names.
        update.update(judge_model=given.judge_model[0], jury_models=given.judge_model[1:])
    if given.concurrency is not None:  # a resume may run wider or narrower; the manifest says what it ran with
        update.update(concurrency=given.concurrency)
    if update:
        manifest = manifest.model_copy(update={"settings": manifest.settings.model_copy(update=update)})
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
    configs = {name: _resumed_config(run_dir, name, s.configs[name]) for name in s.protocols}
    rubrics = [load_rubric(name, flag="--judge") for name in s.judges]
    check_scope(s.judge_scope, rubrics, case_places(Path(s.cases), cases))
    # The options the arms ran with that have no flag: the request shape of a reasoning model, the prices.
    overrides: dict[str, Any] = {
        "max_concurrency": s.concurrency, "prices": s.model.prices, "prices_spec": s.model.prices_spec,
        "omit_settings": tuple(s.model.omit_settings) if s.model.omit_settings is not None else None}
    if s.model.api_key_env:
        key = os.environ.get(s.model.api_key_env)
        if not key:
            raise UserError(f"--resume: the cohort's key comes from ${s.model.api_key_env}, which is not set")
        overrides["api_key"] = key
    options = connection_options(
        None, priced=None, base_url=base_url_for_resume(given.base_url, manifest, os.environ.get("OPENAI_BASE_URL")),
        schema_dialect=s.model.schema_dialect, http_client=s.model.http_client, token_param=s.model.token_param,
        timeout=s.model.timeout or s.configs[s.protocols[0]].get("timeout_s"), max_attempts=s.model.max_attempts,
        retry_base_delay=s.model.retry_base_delay, no_cache=s.model.no_cache,
        cache_path=Path(s.model.cache_path) if s.model.cache_path else None, **overrides)
    if s.judge_model:  # each judge as the manifest keeps it, still the judge it was, its key variable set: else
        where = f"--resume: {run_dir}/manifest.json: judge"  # refused before any arm runs
        refs = parse_refs([s.judge_model, *s.jury_models], flag=where)
        held_to(refs, s.judge_names, where,
                "a resumed cohort keeps its judges: restore the file, or start a new cohort")
        for ref in refs:
            ref.options(options)
    refuse_on_ray(given, s)
    return Plan(run_dir=run_dir, settings=s, cases=cases, configs=configs, rubrics=rubrics, options=options,
                spec=manifest.spec or given, manifest=manifest, scope=s.judge_scope,
                images=cohort_images(s.protocols, found), model_options=own_model_options(s.model_options, options))


def _started_with(everything: list[tuple[Case, Path | None]], s: CohortSettings) -> list[tuple[Case, Path | None]]:
    """The cases a resumed cohort runs: of a cohort that took some of its cases (``--limit``, ``--sample``), the
    ones its manifest lists, by id, in its order (drawing again would draw others once a case is added to or
    removed from the folder, and call one still there gone); of one that took them all, all of them. The
    caller compares their content with the manifest's, so a case gone or changed is refused either way."""
    if s.limit is None and s.sample is None:
        return everything
    by_id = {case.id: (case, file) for case, file in everything}
    return [by_id[case_id] for case_id in s.case_hashes if case_id in by_id]


def _resumed_config(run_dir: Path, name: str, data: Any) -> Any:
    """A protocol's run settings as the manifest recorded them; one this version no longer runs (a retired
    mode, docs/traces.md) is the user's to know about, in one line naming the setting, nothing run."""
    model = get_protocol(name, flag=f"{run_dir}/manifest.json: settings.protocols").config_model
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{run_dir}/manifest.json: settings.configs.{name}: {first_error(exc)}") from None
