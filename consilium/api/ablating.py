"""The library's ablations (docs/ablations.md): a finished cohort's consilium arms re-run with one thing changed
(the moderator, the round cap, one role left out, …), reusing every call the change does not touch, judged by
the same judges on both sides and compared pair by pair, what ``consilium ablate RUN_DIR --kind …`` does,
returned as :class:`Ablated`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.ablation.judging import Judged, judge_arms, judges_label
from consilium.ablation.kinds import Kind
from consilium.ablation.report import new_folder, write_outputs
from consilium.ablation.run import AblatedArm, run_ablation
from consilium.ablation.source import Cohort, read_cohort
from consilium.ablation.tables import arm_rows, call_rows, contribution_rows, pair_rows, stat_rows, stop_rows
from consilium.api.options import as_path, draws, options_of
from consilium.api.sync import sync_twin
from consilium.cohort.resume import base_url_for_resume
from consilium.errors import UserError
from consilium.judges.rubric import Rubric, load_rubric
from consilium.judges.runner import JudgeSetup
from consilium.models import ChatModel
from consilium.models.factory import ModelOptions, build_model, build_ref
from consilium.models.refs import ModelRef, held_to, parse_refs
from consilium.reports.partial import partial_line, partial_of
from consilium.spec.connection import connection_options

__all__ = ["DEFAULT_CAPS", "AblateOptions", "Ablated", "aablate", "ablate"]

#: The round caps ``max-rounds`` sweeps unless ``max_rounds`` says otherwise.
DEFAULT_CAPS = (1, 2, 3, 5)


@dataclass(frozen=True)
class AblateOptions:
    """``consilium ablate``'s options: what to change (``kind``), the other moderator (``moderator``) or the round
    caps to sweep (``max-rounds``), the rubrics (default: the cohort's) and judges (default: the cohort's judge or
    jury), the results folder (default ``RUN_DIR/ablate/<kind>/run-<n>``), the bootstrap's draws and seed, the
    calls in flight (default: the cohort's), the server when the cohort's URL had masked credentials, whether to
    skip the response cache, and ``on_arm``, told of each ablated arm as it finishes."""

    kind: Kind = "moderator"
    moderator_model: str | None = None
    max_rounds: tuple[int, ...] | None = None
    judges: tuple[str, ...] | None = None
    judge_models: tuple[str, ...] = ()
    out: Path | None = None
    bootstrap: int = 10_000
    seed: int = 0
    concurrency: int | None = None
    base_url: str | None = None
    no_cache: bool = False
    on_arm: Callable[[AblatedArm], None] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", as_path(self.out))
        draws(self.bootstrap)


@dataclass(frozen=True)
class Ablated:
    """The results folder, the arms ablated, the calls reused and new, the cohort's completeness when it is
    partial (the pairs are of its finished arms), and the line naming its arms that did not complete."""

    out: Path
    arms: int
    reused: int
    new: int
    done: Any = None
    not_ablated: str | None = None


async def aablate(run_dir: str | Path, options: AblateOptions | None = None, **changes: Any) -> Ablated:
    """Ablate the cohort at ``run_dir`` as ``options`` say; a bad combination (a moderator without ``moderator``
    kind, …) is refused before anything is read."""
    return await _ablate(Path(run_dir), options_of(AblateOptions, options, changes))


ablate = sync_twin(aablate)


def _options(options: AblateOptions, cohort: Cohort) -> ModelOptions:
    """The cohort's way to its models (the manifest's settings), as a resume reaches them."""
    s = cohort.manifest.settings
    key = os.environ.get(s.model.api_key_env) if s.model.api_key_env else None
    if s.model.api_key_env and not key:
        raise UserError(f"{cohort.run_dir}: the cohort's key comes from ${s.model.api_key_env}, which is not set")
    return connection_options(
        None, priced=None,
        base_url=base_url_for_resume(options.base_url, cohort.manifest, os.environ.get("OPENAI_BASE_URL")),
        schema_dialect=s.model.schema_dialect, http_client=s.model.http_client, timeout=s.model.timeout,
        cache_path=Path(s.model.cache_path) if s.model.cache_path else None,
        no_cache=options.no_cache or s.model.no_cache, max_attempts=s.model.max_attempts,
        retry_base_delay=s.model.retry_base_delay, max_concurrency=options.concurrency or s.concurrency, api_key=key)


def _rubrics(options: AblateOptions, cohort: Cohort) -> list[Rubric]:
    names = options.judges if options.judges is not None else cohort.manifest.settings.judges
    return [load_rubric(name, flag="--judge") for name in dict.fromkeys(names)]


def _judge_specs(options: AblateOptions, cohort: Cohort, rubrics: list[Rubric]) -> list[ModelRef]:
    """Who judges both sides: each ``--judge-model`` given (a spec, ``SPEC@BASE_URL`` or a model config file:
    consilium/models/refs.py), else the cohort's judge and the rest of its jury, as its manifest records them."""
    s = cohort.manifest.settings
    given: list[str] = list(options.judge_models)
    where = f"{cohort.run_dir}/manifest.json: settings.judge_model"
    refs = parse_refs(given, flag="--judge-model") if given else \
        parse_refs([s.judge_model, *s.jury_models], flag=where) if s.judge_model else []
    if not given:  # the cohort's judges must still be the ones that judged its arms
        held_to(refs, s.judge_names, where, "restore the file, or name the judges with --judge-model")
    if rubrics and not refs:
        raise UserError("--judge-model: the cohort names no judge model; give one to judge both sides with")
    return refs if rubrics else []


async def _ablate(run_dir: Path, options: AblateOptions) -> Ablated:
    kind: Kind = options.kind
    if options.moderator_model is not None and kind != "moderator":
        raise UserError("--moderator-model: only --kind moderator changes the moderator")
    if kind == "moderator" and options.moderator_model is None:
        raise UserError("--moderator-model: --kind moderator needs the other moderator's model spec")
    if options.max_rounds is not None and kind != "max-rounds":
        raise UserError("--max-rounds: only --kind max-rounds sweeps the round cap")
    caps: tuple[int, ...] = options.max_rounds or DEFAULT_CAPS
    cohort = read_cohort(run_dir)
    done = partial_of(run_dir)  # a stopped or running cohort's: fewer arms, so fewer pairs
    rubrics = _rubrics(options, cohort)
    judges = _judge_specs(options, cohort, rubrics)
    s = cohort.manifest.settings
    model_options = _options(options, cohort)
    specs = dict.fromkeys([*(a.model_spec for a in cohort.arms), *([s.moderator_model] if s.moderator_model else []),
                           *([options.moderator_model] if options.moderator_model else [])])
    models: dict[str, ChatModel] = {spec: build_model(spec, model_options) for spec in specs}
    # The cohort's judges as it built them (consilium/cohort/finish.py): each on its own server if it has
    # one, named by its spec (and server).
    setups = [JudgeSetup(model=build_ref(ref, model_options), scope=s.judge_scope, name=ref.name,
                         decoding=s.judge_decoding) for ref in judges]
    out = new_folder(run_dir, kind, options.out, judges=[ref.record for ref in judges])
    limit = model_options.max_concurrency
    started = time.perf_counter()

    async def go() -> tuple[list[AblatedArm], Judged]:
        try:
            arms = await run_ablation(cohort, kind, models, out, moderator=options.moderator_model,
                                      max_rounds=caps, limit=limit, on_done=options.on_arm)
            return arms, await judge_arms(cohort, arms, rubrics, setups, out, limit=limit)
        finally:
            for model in [*models.values(), *(setup.model for setup in setups)]:
                await model.aclose()

    arms, judged = await go()
    originals, scores = judged.originals, judged.ablated
    pairs, left_out = pair_rows(arms, cohort.run_dir, originals, scores)
    stats = stat_rows(pairs, left_out, draws=options.bootstrap, seed=options.seed)
    tables = {"arms": arm_rows(arms, cohort.run_dir, out, originals, scores), "pairs": pairs, "stats": stats,
              "stop_reasons": stop_rows(arms), "calls": call_rows(arms)}
    if kind == "leave-one-out":
        tables["contributions"] = contribution_rows(stats)
    reused, new = sum(a.reused for a in arms), sum(a.new for a in arms)
    summary = [f"cohort: {cohort.run_dir}",
               *([f"{partial_line(done)}: the pairs are of its finished arms only"] if done is not None else []),
               f"ablated arms: {len(arms)} from {len(cohort.arms)} completed consilium "
               f"arms ({sum(a.after.status != 'completed' for a in arms)} failed)",
               *([_not_ablated(cohort)] if cohort.not_completed else []),
               f"calls: {reused} reused from the original traces, {new} new",
               f"judged with: {', '.join(r.name for r in rubrics) or 'no rubric'}"
               + (f" by {', '.join(ref.name for ref in judges)}" if judges else ""),
               *_judged_lines(judged, setups),
               f"wall time: {time.perf_counter() - started:.1f} s"]
    write_outputs(out, kind, tables, summary, done)
    return Ablated(out=out, arms=len(arms), reused=reused, new=new, done=done,
                   not_ablated=_not_ablated(cohort) if cohort.not_completed else None)


def _not_ablated(cohort: Cohort) -> str:
    """The cohort's consilium arms that did not complete: no original to re-run, so no pair (counted, named)."""
    return (f"{len(cohort.not_completed)} consilium arms of the cohort did not complete, so were not ablated and "
            f"are in no pair: {', '.join(cohort.not_completed)}")


def _judged_lines(judged: Judged, setups: list[JudgeSetup]) -> list[str]:
    """Who judged each side of the pairs: the same judges, and where the originals' judgements came from."""
    if not setups:
        return []
    label = judges_label(setups)
    others = sorted(set(judged.not_reused))
    return [f"originals judged by {label}: {judged.read} judgements read from the cohort, {judged.made} made here"
            + (f" (the cohort's were not reused: {'; '.join(others)})" if others else ""),
            f"ablated arms judged by {label}"]
