"""``consilium calibrate evolve``: evolve each criterion's judge instructions against physician ratings (the
library's :func:`consilium.api.evolving.evolve`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from consilium.cli.options import add_model_arguments, finite_float, fraction, model_options, model_spec

__all__ = ["register_evolve"]


def register_evolve(commands: Any, shared: Callable[[argparse.ArgumentParser], None],
                    positive_int: Callable[[str], int]) -> None:
    evolve = commands.add_parser("evolve", help="evolve judge instructions per criterion (ai-consilium Table 5)")
    shared(evolve)
    add_model_arguments(evolve, default=None, flag="--judge-model")
    evolve.add_argument("--optimiser-model", required=True, metavar="SPEC", help="model that edits instructions")
    evolve.add_argument("--criterion", action="append", default=None, help="criteria to evolve (default: all rated)")
    evolve.add_argument("--population", type=positive_int, default=4, help="instructions per generation (4)")
    evolve.add_argument("--generations", type=positive_int, default=3, help="generations (3)")
    evolve.add_argument("--repeats", type=positive_int, default=3, help="repeats with new seeds and splits (3)")
    evolve.add_argument("--train-fraction", type=fraction, default=0.5, help="share of cases for training (0.5)")
    evolve.add_argument("--max-tokens", type=positive_int, default=384, help="output tokens per judge call (384)")
    evolve.add_argument("--judge-temperature", type=finite_float, default=0.0,
                        help="the judge's sampling temperature, 0 to 2 (0); above 0 each repeat's new seeds "
                             "make re-evaluation a fresh sample")
    evolve.set_defaults(func=run_evolve)


def run_evolve(args: argparse.Namespace) -> int:
    from consilium.api.evolving import EvolveOptions, evolve, table_markdown

    done = evolve(args.judgements, EvolveOptions(
        ratings=args.ratings, rubric=args.rubric, judge_model=model_spec(args), judge_flag=args.model_flag,
        optimiser_model=args.optimiser_model, criterion=tuple(args.criterion) if args.criterion else None,
        population=args.population, generations=args.generations, repeats=args.repeats,
        train_fraction=args.train_fraction, max_tokens=args.max_tokens, judge_temperature=args.judge_temperature,
        seed=args.seed, out=args.out, model_options=model_options(args)))
    results = done.results
    print(f"evolve {done.rubric.name}: {len(results)} criteria, {done.rated} rated judged items, {done.unmatched} "
          f"ratings naming no judged trace, {args.repeats} repeats, {done.seconds:.1f} s")
    print(table_markdown(results))
    for r in results:
        print(f"{r.criterion}: {r.decision()[1]}")
    if not any(r.decision()[0] for r in results):
        print("no criterion promoted: no new rubric version written")
    print("report: " + ", ".join(str(p) for p in done.files))
    return 0
