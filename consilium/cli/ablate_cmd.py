"""``consilium ablate RUN_DIR --kind …``: re-run a finished cohort's consilium arms with one thing changed, judge
them as the cohort was judged, and compare with the originals case by case (docs/ablations.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from consilium import aio
from consilium.ablation.judging import Judged, judge_arms, judges_label
from consilium.ablation.kinds import KINDS, Kind
from consilium.ablation.report import new_folder, write_outputs
from consilium.ablation.run import AblatedArm, run_ablation
from consilium.ablation.source import Cohort, read_cohort
from consilium.ablation.tables import arm_rows, call_rows, contribution_rows, pair_rows, stat_rows, stop_rows
from consilium.cli.concurrency import add_concurrency_argument
from consilium.cli.options import model_options, positive_int
from consilium.cohort.resume import base_url_for_resume
from consilium.errors import UserError
from consilium.judges.rubric import Rubric, load_rubric
from consilium.judges.runner import JudgeSetup
from consilium.models import ChatModel
from consilium.models.factory import ModelOptions, build_model, build_ref
from consilium.models.refs import ModelRef, held_to, parse_refs
from consilium.reports.partial import partial_line, partial_of

__all__ = ["register", "run"]

#: The round caps --kind max-rounds sweeps unless --max-rounds says otherwise.
DEFAULT_CAPS = (1, 2, 3, 5)


def _caps(text: str) -> tuple[int, ...]:
    try:
        caps = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected round caps such as 1,2,3,5, not {text!r}") from None
    if not caps or any(c < 1 for c in caps) or len(set(caps)) != len(caps):
        raise argparse.ArgumentTypeError(f"expected distinct round caps of at least 1, not {text!r}")
    return caps


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("ablate", help="re-run a cohort's arms with one thing changed and compare, paired")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished cohort's folder")
    parser.add_argument("--kind", required=True, choices=KINDS, help="what to change (docs/ablations.md)")
    parser.add_argument("--moderator-model", default=None, metavar="SPEC",
                        help="--kind moderator: the other moderator's model")
    parser.add_argument("--max-rounds", type=_caps, default=None, metavar="N,N,…",
                        help="--kind max-rounds: the round caps to sweep (default 1,2,3,5)")
    parser.add_argument("--judge", action="append", default=None, metavar="RUBRIC",
                        help="score with this rubric (repeatable; default: the cohort's rubrics)")
    parser.add_argument("--judge-model", action="append", default=None, metavar="SPEC",
                        help="the judge's model (a spec, SPEC@BASE_URL[#KEY_VAR] or a model config file: a judge "
                             "on its own server); given again, a jury (default: the cohort's judge or jury). Other "
                             "judges than the cohort's judge the originals again too (docs/ablations.md, Judging)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="a new folder for the results (default: RUN_DIR/ablate/<kind>/run-<n>)")
    parser.add_argument("--bootstrap", type=positive_int, default=10_000, metavar="N",
                        help="bootstrap resamples (10000)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="the bootstrap's seed (0)")
    group = parser.add_argument_group("model")
    add_concurrency_argument(group, positive_int)
    group.add_argument("--base-url", default=None, help="the server, when the cohort's URL had masked credentials")
    group.add_argument("--no-cache", action="store_true", help="do not use the SQLite response cache")
    parser.set_defaults(func=run)


def _options(args: argparse.Namespace, cohort: Cohort) -> ModelOptions:
    """The cohort's way to its models (the manifest's settings), as a resume reaches them."""
    s = cohort.manifest.settings
    kept = argparse.Namespace(
        model_config=None,
        base_url=base_url_for_resume(args.base_url, cohort.manifest, os.environ.get("OPENAI_BASE_URL")),
        schema_dialect=s.model.schema_dialect, http_client=s.model.http_client, concurrency=None,
        timeout=s.model.timeout, max_attempts=s.model.max_attempts, retry_base_delay=s.model.retry_base_delay,
        no_cache=args.no_cache or s.model.no_cache, cache_path=Path(s.model.cache_path) if s.model.cache_path else None)
    overrides: dict[str, object] = {"max_concurrency": args.concurrency or s.concurrency}
    if s.model.api_key_env:
        key = os.environ.get(s.model.api_key_env)
        if not key:
            raise UserError(f"{cohort.run_dir}: the cohort's key comes from ${s.model.api_key_env}, which is not set")
        overrides["api_key"] = key
    return model_options(kept, **overrides)


def _rubrics(args: argparse.Namespace, cohort: Cohort) -> list[Rubric]:
    names = args.judge if args.judge is not None else cohort.manifest.settings.judges
    return [load_rubric(name, flag="--judge") for name in dict.fromkeys(names)]


def _judge_specs(args: argparse.Namespace, cohort: Cohort, rubrics: list[Rubric]) -> list[ModelRef]:
    """Who judges both sides: each ``--judge-model`` given (a spec, ``SPEC@BASE_URL`` or a model config file:
    consilium/models/refs.py), else the cohort's judge and the rest of its jury, as its manifest records them."""
    s = cohort.manifest.settings
    given: list[str] = args.judge_model or []
    where = f"{cohort.run_dir}/manifest.json: settings.judge_model"
    refs = parse_refs(given, flag="--judge-model") if given else \
        parse_refs([s.judge_model, *s.jury_models], flag=where) if s.judge_model else []
    if not given:  # the cohort's judges must still be the ones that judged its arms
        held_to(refs, s.judge_names, where, "restore the file, or name the judges with --judge-model")
    if rubrics and not refs:
        raise UserError("--judge-model: the cohort names no judge model; give one to judge both sides with")
    return refs if rubrics else []


def _progress() -> Callable[[AblatedArm], None]:
    """One line on stderr per ablated arm as it finishes."""
    count = [0]

    def on_done(arm: AblatedArm) -> None:
        count[0] += 1
        o = arm.original
        replicate = f" · r{o.replicate}" if o.replicate else ""
        print(f"[{count[0]}] {o.case_id} · {o.format}{replicate} · {arm.condition.name}: {arm.after.status} · "
              f"{arm.reused} calls reused, {arm.new} new", file=sys.stderr)

    return on_done


def run(args: argparse.Namespace) -> int:
    kind: Kind = args.kind
    if args.moderator_model is not None and kind != "moderator":
        raise UserError("--moderator-model: only --kind moderator changes the moderator")
    if kind == "moderator" and args.moderator_model is None:
        raise UserError("--moderator-model: --kind moderator needs the other moderator's model spec")
    if args.max_rounds is not None and kind != "max-rounds":
        raise UserError("--max-rounds: only --kind max-rounds sweeps the round cap")
    caps: tuple[int, ...] = args.max_rounds or DEFAULT_CAPS
    cohort = read_cohort(args.run_dir)
    done = partial_of(args.run_dir)  # a stopped or running cohort's: fewer arms, so fewer pairs
    rubrics = _rubrics(args, cohort)
    judges = _judge_specs(args, cohort, rubrics)
    s = cohort.manifest.settings
    options = _options(args, cohort)
    specs = dict.fromkeys([*(a.model_spec for a in cohort.arms), *([s.moderator_model] if s.moderator_model else []),
                           *([args.moderator_model] if args.moderator_model else [])])
    models: dict[str, ChatModel] = {spec: build_model(spec, options) for spec in specs}
    # The cohort's judges as it built them (consilium/cli/cohort_finish.py): each on its own server if it has
    # one, named by its spec (and server).
    setups = [JudgeSetup(model=build_ref(ref, options), scope=s.judge_scope, name=ref.name,
                         decoding=s.judge_decoding) for ref in judges]
    out = new_folder(args.run_dir, kind, args.out, judges=[ref.record for ref in judges])
    limit = options.max_concurrency
    started = time.perf_counter()

    async def go() -> tuple[list[AblatedArm], Judged]:
        try:
            arms = await run_ablation(cohort, kind, models, out, moderator=args.moderator_model,
                                      max_rounds=caps, limit=limit, on_done=_progress())
            return arms, await judge_arms(cohort, arms, rubrics, setups, out, limit=limit)
        finally:
            for model in [*models.values(), *(setup.model for setup in setups)]:
                await model.aclose()

    arms, judged = aio.run(go())
    originals, scores = judged.originals, judged.ablated
    pairs, left_out = pair_rows(arms, cohort.run_dir, originals, scores)
    stats = stat_rows(pairs, left_out, draws=args.bootstrap, seed=args.seed)
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
    if done is not None:
        print(partial_line(done))
    print(f"{len(arms)} ablated arms: {reused} calls reused, {new} new; results in {out}")
    if cohort.not_completed:
        print(_not_ablated(cohort))
    return 0


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
