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
from consilium.calibration.evolution_results import CriterionResult, Evaluation, RepeatResult
from consilium.calibration.evolve import evolve_criterion, rated_items
from consilium.calibration.pairs import load_judgements
from consilium.calibration.ratings import load_ratings
from consilium.cli.options import add_model_arguments, finite_float, fraction, model_options, model_spec
from consilium.cohort.progress import ItemProgress
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup
from consilium.judges.scope import out_of_scope_score
from consilium.models import GenerationSettings
from consilium.models.factory import build_model, build_ref
from consilium.models.refs import parse_model_ref

__all__ = ["TABLE5_COLUMNS", "register_evolve"]

#: ai-consilium.txt Table 5: MAE of the best initial and best descendant on training re-evaluation
#: and on validation, each as mean and SD over repeats.
TABLE5_COLUMNS = [f"{phase}_{which}_{stat}" for phase in ("train_reeval", "val")
                  for which in ("best_initial", "best_descendant") for stat in ("mean", "sd")]


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
    if not 0 < args.train_fraction < 1:
        raise UserError("--train-fraction: must be between 0 and 1")
    if not 0 <= args.judge_temperature <= 2:
        raise UserError("--judge-temperature: must be between 0 and 2")
    rubric = load_rubric(args.rubric)
    if not rubric.kind.evolvable:
        raise UserError(f"--rubric: {rubric.name} has no criterion instructions to evolve")
    ratings = load_ratings(args.ratings, rubric)
    items, unmatched = rated_items(ratings, load_judgements(args.judgements, rubric.name), args.ratings,
                                   out_of_scope_score(rubric))
    if not items:
        raise UserError(f"{args.ratings}: no rating names a judged trace in {args.judgements}")
    wanted = args.criterion or sorted(items)
    unknown = [c for c in wanted if c not in items]
    if unknown:
        raise UserError(f"--criterion: no rated, judged items for {', '.join(unknown)}")
    for name in wanted:
        cases = {i.case_id for i in items[name]}
        if len(cases) < 2:
            raise UserError(f"{args.ratings}: criterion {name}: rated on {len(cases)} case only; evolve needs two or "
                            "more (training and validation cases); rate more cases or leave it out with --criterion")
    options = model_options(args)
    judge = JudgeSetup(model=build_ref(parse_model_ref(model_spec(args), flag=args.model_flag), options),
                       settings=GenerationSettings(temperature=args.judge_temperature, seed=args.seed,
                                                   max_tokens=args.max_tokens))
    optimiser = build_model(args.optimiser_model, options)
    started = time.perf_counter()

    def repeated(name: str) -> Callable[[RepeatResult], None]:
        return lambda x: progress.advance(f"{name} · repeat {x.repeat + 1}",
                                          f"train MAE {x.train_initial.mae:.3f} -> {x.train_descendant.mae:.3f}")

    async def go() -> list[CriterionResult]:
        try:
            return [await evolve_criterion(rubric, next(c for c in rubric.criteria if c.id == name), items[name],
                                           judge=judge, optimiser=optimiser, population=args.population,
                                           generations=args.generations, repeats=args.repeats,
                                           train_fraction=args.train_fraction, seed=args.seed,
                                           on_repeat=repeated(name))
                    for name in wanted]
        finally:
            await judge.model.aclose()
            await optimiser.aclose()

    with ItemProgress("repeats", len(wanted) * args.repeats) as progress:
        results = aio.run(go())
    elapsed = time.perf_counter() - started
    out = args.out or args.judgements / "calibration"
    paths = _write(out, rubric, results, args, elapsed)
    rated = sum(len(items[name]) for name in wanted)
    print(f"evolve {rubric.name}: {len(results)} criteria, {rated} rated judged items, {unmatched} ratings naming "
          f"no judged trace, {args.repeats} repeats, {elapsed:.1f} s")
    print(_table(results))
    for r in results:
        print(f"{r.criterion}: {r.decision()[1]}")
    if not any(r.decision()[0] for r in results):
        print("no criterion promoted: no new rubric version written")
    print("report: " + ", ".join(str(p) for p in paths))
    return 0


def _fmt(stat: dict[str, float | None]) -> str:
    return "–" if stat["mean"] is None or stat["sd"] is None else f"{stat['mean']:.3f} ± {stat['sd']:.3f}"


def _table(results: list[CriterionResult]) -> str:
    lines = ["| criterion | train best initial | train best descendant | val best initial | val best descendant |",
             "|---|---|---|---|---|"]
    for r in results:
        s = r.summary()
        lines.append(f"| {r.criterion} | {_fmt(s['train_best_initial'])} | {_fmt(s['train_best_descendant'])} | "
                     f"{_fmt(s['val_best_initial'])} | {_fmt(s['val_best_descendant'])} |")
    return "\n".join(lines)


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows([["" if v is None else v for v in row] for row in rows])
    return buffer.getvalue()


def _cell(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def table5_csv(results: list[CriterionResult]) -> str:
    """One row per criterion: Table 5's four MAE columns as mean and SD over repeats (4 decimals, as the
    paper prints them), and whether the evolved instructions were promoted and why."""
    rows = []
    for r in results:
        s = r.summary()
        cells = [_cell(s[f"{'train' if p == 'train_reeval' else p}_{w}"][stat]) for p in ("train_reeval", "val")
                 for w in ("best_initial", "best_descendant") for stat in ("mean", "sd")]
        promoted, reason = r.decision()
        rows.append([r.criterion, len(r.repeats), *cells, str(promoted).lower(), reason])
    return _csv(["criterion", "repeats", *TABLE5_COLUMNS, "promoted", "decision"], rows)


def repeats_csv(results: list[CriterionResult]) -> str:
    """One row per criterion and repeat: the re-evaluation and validation MAE (Table 5's cells before
    averaging), the selection-pass MAE they replace, the split, the judge seeds and call counts."""
    rows = []
    for r in results:
        for x in r.repeats:
            rows.append([r.criterion, x.repeat, x.train_initial.mae, x.train_descendant.mae,
                         x.val_initial.mae if x.val_initial else None,
                         x.val_descendant.mae if x.val_descendant else None,
                         x.selection_initial, x.selection_descendant, x.train_cases, x.val_cases, x.train_items,
                         x.val_items, x.selection_seed, x.reevaluation_seed, x.selection_calls,
                         sum(e.calls for e in _reevaluations(x)), sum(e.cached for e in _reevaluations(x))])
    return _csv(["criterion", "repeat", "train_best_initial", "train_best_descendant", "val_best_initial",
                 "val_best_descendant", "selection_best_initial", "selection_best_descendant", "train_cases",
                 "val_cases", "train_items", "val_items", "judge_seed_selection", "judge_seed_reevaluation",
                 "selection_judge_calls", "reevaluation_judge_calls", "reevaluation_cached_calls"], rows)


def _reevaluations(x: RepeatResult) -> list[Evaluation]:
    """The distinct re-evaluation and validation runs of a repeat (one set when no descendant beat the
    initial population and both are the same candidate)."""
    runs = [x.train_initial, x.val_initial]
    if x.best_descendant is not x.best_initial:
        runs += [x.train_descendant, x.val_descendant]
    return [e for e in runs if e is not None]


def _write(out: Path, rubric: Any, results: list[CriterionResult], args: argparse.Namespace,
           elapsed: float) -> list[Path]:
    promoted = {r.criterion: r for r in results if r.decision()[0] and r.winner is not None}
    md = [f"# Judge-instruction evolution: {rubric.name} v{rubric.version}", "",
          f"MAE against the physicians' mean (mean ± SD over {args.repeats} repeats; population {args.population}, "
          f"{args.generations} generations, training share {args.train_fraction}, seed {args.seed}; "
          f"{elapsed:.1f} s). Training MAE is a re-evaluation: the best initial and best descendant judged again "
          "with a new judge seed, not the selection pass's numbers (ai-consilium.txt, Table 5).", "",
          _table(results), ""]
    md += [f"- {r.criterion}: {r.decision()[1]}" for r in results] + [""]
    paths = []
    if promoted:
        data = rubric.model_dump(mode="json", exclude_none=True)
        data["version"] = rubric.version + 1
        winners = {k: r.winner.instruction for k, r in promoted.items() if r.winner is not None}
        data["criteria"] = [dict(c, definition=winners[c["id"]]) if c["id"] in winners else c
                            for c in data["criteria"]]
        provenance: dict[str, Any] = {}
        for k, r in promoted.items():
            chosen = r.chosen
            assert chosen is not None and chosen.val_initial is not None and chosen.val_descendant is not None
            s = r.summary()
            provenance[k] = {"repeat": chosen.repeat, "train_mae_before": chosen.train_initial.mae,
                             "train_mae_after": chosen.train_descendant.mae, "val_mae_before": chosen.val_initial.mae,
                             "val_mae_after": chosen.val_descendant.mae,
                             "mean_over_repeats": {name: s[name]["mean"] for name in (
                                 "train_best_initial", "train_best_descendant", "val_best_initial",
                                 "val_best_descendant")}}
        data["provenance"] = {"parent": f"{rubric.name} v{rubric.version}", "ratings": str(args.ratings),
                              "judgements": str(args.judgements), "seed": args.seed, "repeats": args.repeats,
                              "criteria": provenance}
        path = write_text_atomic(out / f"{rubric.name}.v{rubric.version + 1}.yaml",
                                 yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        paths.append(path)
        md.append(f"Evolved instructions for {', '.join(sorted(promoted))} saved as a new rubric version: {path} "
                  f"(use with --rubric {path}); the shipped rubric is unchanged.")
    else:
        md.append("No criterion's best descendant beat the best initial instructions on both training "
                  "re-evaluation and validation (means over repeats); no new rubric version written.")
    paths.insert(0, write_text_atomic(out / f"evolve.{rubric.name}.table5.csv", table5_csv(results)))
    paths.insert(0, write_text_atomic(out / f"evolve.{rubric.name}.csv", repeats_csv(results)))
    paths.insert(0, write_text_atomic(out / f"evolve.{rubric.name}.md", "\n".join(md) + "\n"))
    return paths
