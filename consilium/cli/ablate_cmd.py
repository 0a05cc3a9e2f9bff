"""``consilium ablate RUN_DIR --kind …``: re-run a finished cohort's consilium arms with one thing changed, judge
them as the cohort was judged, and compare with the originals case by case (docs/ablations.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from consilium.ablation.kinds import KINDS
from consilium.ablation.run import AblatedArm
from consilium.cli.concurrency import add_concurrency_argument
from consilium.cli.options import positive_int
from consilium.cli.table import SUMMARIES
from consilium.reports.partial import partial_line

__all__ = ["register", "run"]


def _caps(text: str) -> tuple[int, ...]:
    try:
        caps = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected round caps such as 1,2,3,5, not {text!r}") from None
    if not caps or any(c < 1 for c in caps) or len(set(caps)) != len(caps):
        raise argparse.ArgumentTypeError(f"expected distinct round caps of at least 1, not {text!r}")
    return caps


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("ablate", help=SUMMARIES["ablate"])
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
    from consilium.api.ablating import AblateOptions, ablate

    done = ablate(args.run_dir, AblateOptions(
        kind=args.kind, moderator_model=args.moderator_model, max_rounds=args.max_rounds, judges=args.judge and
        tuple(args.judge), judge_models=tuple(args.judge_model or ()), out=args.out, bootstrap=args.bootstrap,
        seed=args.seed, concurrency=args.concurrency, base_url=args.base_url, no_cache=args.no_cache,
        on_arm=_progress()))
    if done.done is not None:
        print(partial_line(done.done))
    print(f"{done.arms} ablated arms: {done.reused} calls reused, {done.new} new; results in {done.out}")
    if done.not_ablated:
        print(done.not_ablated)
    return 0
