"""``consilium calibrate evolve``: evolve each criterion's judge instructions against physician ratings."""

from __future__ import annotations

import argparse
import csv
import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from consilium import aio
from consilium.calibration.evolve import CriterionResult, Item, evolve_criterion, targets
from consilium.calibration.pairs import load_judgements, pair_ratings
from consilium.calibration.ratings import load_ratings
from consilium.cli.options import add_model_arguments, fraction, model_options, model_spec
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup
from consilium.models import GenerationSettings
from consilium.models.factory import build_model
from consilium.traces.io import read_trace

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
    evolve.set_defaults(func=run_evolve)


def _items(args: argparse.Namespace, rubric_name: str, pairs: list[Any]) -> dict[str, list[Item]]:
    goals = targets(pairs)
    by_criterion: dict[str, list[Item]] = {}
    for path, judgement in load_judgements(args.judgements, rubric_name):
        trace_file = path.parent / judgement.trace
        if not trace_file.is_file():
            raise UserError(f"{path}: trace: {judgement.trace} is not beside the judgement")
        trace = read_trace(trace_file)
        for (case_id, component, criterion), target in goals.items():
            if case_id == judgement.case_id and any(i.component == component and i.criterion == criterion
                                                    for i in judgement.items):
                by_criterion.setdefault(criterion, []).append(Item(case_id, component, trace, target))
    return by_criterion


def run_evolve(args: argparse.Namespace) -> int:
    rubric = load_rubric(args.rubric)
    if rubric.scoring not in ("mean", "single", "weighted_decisions"):
        raise UserError(f"--rubric: {rubric.name} has no criterion instructions to evolve")
    ratings = load_ratings(args.ratings, rubric)
    pairs, _ = pair_ratings(ratings, load_judgements(args.judgements, rubric.name), args.ratings)
    items = _items(args, rubric.name, pairs)
    wanted = args.criterion or sorted(items)
    unknown = [c for c in wanted if c not in items]
    if unknown:
        raise UserError(f"--criterion: no rated, judged items for {', '.join(unknown)}")
    options = model_options(args)
    judge = JudgeSetup(model=build_model(model_spec(args), options),
                       settings=GenerationSettings(temperature=0.0, seed=0, max_tokens=args.max_tokens))
    optimiser = build_model(args.optimiser_model, options)
    started = time.perf_counter()

    async def go() -> list[CriterionResult]:
        try:
            return [await evolve_criterion(rubric, next(c for c in rubric.criteria if c.id == name), items[name],
                                           judge=judge, optimiser=optimiser, population=args.population,
                                           generations=args.generations, repeats=args.repeats,
                                           train_fraction=args.train_fraction, seed=args.seed)
                    for name in wanted]
        finally:
            await judge.model.aclose()
            await optimiser.aclose()

    results = aio.run(go())
    elapsed = time.perf_counter() - started
    out = args.out or args.judgements / "calibration"
    paths = _write(out, rubric, results, args, elapsed)
    print(f"evolve {rubric.name}: {len(results)} criteria, {args.repeats} repeats, {elapsed:.1f} s")
    print(_table(results))
    print("report: " + ", ".join(str(p) for p in paths))
    return 0


def _fmt(stat: dict[str, float | None]) -> str:
    return "–" if stat["mean"] is None else f"{stat['mean']:.3f} ± {stat['sd']:.3f}"


def _table(results: list[CriterionResult]) -> str:
    lines = ["| criterion | train best initial | train best descendant | val best initial | val best descendant |",
             "|---|---|---|---|---|"]
    for r in results:
        s = r.summary()
        lines.append(f"| {r.criterion} | {_fmt(s['train_best_initial'])} | {_fmt(s['train_best_descendant'])} | "
                     f"{_fmt(s['val_best_initial'])} | {_fmt(s['val_best_descendant'])} |")
    return "\n".join(lines)


def _write(out: Path, rubric: Any, results: list[CriterionResult], args: argparse.Namespace,
           elapsed: float) -> list[Path]:
    improved = {r.criterion: r for r in results
                if r.winner and r.best_descendant_train and r.best_descendant_train[0] < r.best_initial_train[0]}
    md = [f"# Judge-instruction evolution: {rubric.name} v{rubric.version}", "",
          f"MAE against the physicians' mean (mean ± SD over {args.repeats} repeats; population {args.population}, "
          f"{args.generations} generations, training share {args.train_fraction}, seed {args.seed}; "
          f"{elapsed:.1f} s).", "", _table(results), ""]
    paths = []
    if improved:
        data = rubric.model_dump(mode="json", exclude_none=True)
        data["version"] = rubric.version + 1
        winners = {k: r.winner.instruction for k, r in improved.items() if r.winner is not None}
        data["criteria"] = [dict(c, definition=winners[c["id"]]) if c["id"] in winners else c
                            for c in data["criteria"]]
        data["provenance"] = {"parent": f"{rubric.name} v{rubric.version}", "ratings": str(args.ratings),
                              "judgements": str(args.judgements), "seed": args.seed,
                              "criteria": {k: {"train_mae_before": r.best_initial_train[0],
                                               "train_mae_after": r.best_descendant_train[0],
                                               "val_mae_before": r.best_initial_val[0],
                                               "val_mae_after": r.best_descendant_val[0]}
                                           for k, r in improved.items()}}
        path = write_text_atomic(out / f"{rubric.name}.v{rubric.version + 1}.yaml",
                                 yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        paths.append(path)
        md.append(f"Evolved instructions for {', '.join(sorted(improved))} saved as a new rubric version: {path} "
                  f"(use with --rubric {path}); the shipped rubric is unchanged.")
    else:
        md.append("No descendant beat the best initial instructions on training; no new rubric version written.")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["criterion", "repeat", "train_best_initial", "train_best_descendant", "val_best_initial",
                     "val_best_descendant"])
    for r in results:
        for i in range(len(r.best_initial_train)):
            writer.writerow([r.criterion, i, r.best_initial_train[i], r.best_descendant_train[i],
                             r.best_initial_val[i], r.best_descendant_val[i]])
    paths.insert(0, write_text_atomic(out / f"evolve.{rubric.name}.csv", buffer.getvalue()))
    paths.insert(0, write_text_atomic(out / f"evolve.{rubric.name}.md", "\n".join(md) + "\n"))
    return paths
