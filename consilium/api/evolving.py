"""The library's evolution of a judge's criterion instructions against physician ratings (ai-consilium.txt,
Table 5; docs/calibration.md): per criterion, populations of instructions bred by an optimiser model, the best
initial and best descendant re-evaluated on training cases and checked on validation cases over repeats, and a
new rubric version written only for a criterion whose descendant wins both, what ``consilium calibrate evolve``
does, returned as :class:`Evolved`."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from consilium.api.options import as_path, options_of
from consilium.api.sync import sync_twin
from consilium.calibration.evolution_results import CriterionResult, Evaluation, RepeatResult
from consilium.calibration.evolve import evolve_criterion, rated_items
from consilium.calibration.pairs import load_judgements
from consilium.calibration.ratings import load_ratings
from consilium.cohort.progress import ItemProgress
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup
from consilium.judges.scope import out_of_scope_score
from consilium.models import GenerationSettings
from consilium.models.factory import ModelOptions, build_model, build_ref
from consilium.models.refs import parse_model_ref

__all__ = ["TABLE5_COLUMNS", "EvolveOptions", "Evolved", "aevolve", "evolve", "repeats_csv", "table5_csv",
           "table_markdown"]

TABLE5_COLUMNS = [f"{phase}_{which}_{stat}" for phase in ("train_reeval", "val")
                  for which in ("best_initial", "best_descendant") for stat in ("mean", "sd")]



@dataclass(frozen=True)
class EvolveOptions:
    """``consilium calibrate evolve``'s options: the ratings, rubric, judge model (a spec, ``SPEC@BASE_URL`` or a
    model config file) and the optimiser's, the criteria (default: every rated one), population, generations,
    repeats, training share, output tokens and temperature of the judge, the seed, the report folder (default
    ``JUDGEMENTS/calibration``) and the models' options (default: from the environment)."""

    ratings: Path = Path()
    rubric: str = ""
    judge_model: str = ""
    optimiser_model: str = ""
    criterion: tuple[str, ...] | None = None
    population: int = 4
    generations: int = 3
    repeats: int = 3
    train_fraction: float = 0.5
    max_tokens: int = 384
    judge_temperature: float = 0.0
    seed: int = 0
    out: Path | None = None
    model_options: ModelOptions | None = None
    judge_flag: str = "judge_model"

    def __post_init__(self) -> None:
        object.__setattr__(self, "ratings", Path(self.ratings))
        object.__setattr__(self, "out", as_path(self.out))
        if not 0 < self.train_fraction < 1:
            raise UserError("--train-fraction: must be between 0 and 1")
        if not 0 <= self.judge_temperature <= 2:
            raise UserError("--judge-temperature: must be between 0 and 2")


@dataclass(frozen=True)
class Evolved:
    """The rubric, each criterion's result (its repeats, summary, decision and winner), the files written (the
    report, the repeats' and Table 5's CSV, a promoted rubric version), the rated judged items used, the ratings
    naming no judged trace, and the seconds it took."""

    rubric: Any
    results: list[CriterionResult]
    files: list[Path]
    rated: int
    unmatched: int
    seconds: float


async def aevolve(judgements: str | Path, options: EvolveOptions | None = None, **changes: Any) -> Evolved:
    """Evolve the judge's instructions of each criterion; bad input (a rubric with no instructions, a criterion
    rated on one case only) is refused before a model is built."""
    return await _evolve(Path(judgements), options_of(EvolveOptions, options, changes))


async def _evolve(judgements: Path, options: EvolveOptions) -> Evolved:
    rubric = load_rubric(options.rubric)
    if not rubric.kind.evolvable:
        raise UserError(f"--rubric: {rubric.name} has no criterion instructions to evolve")
    ratings = load_ratings(options.ratings, rubric)
    items, unmatched = rated_items(ratings, load_judgements(judgements, rubric.name), options.ratings,
                                   out_of_scope_score(rubric))
    if not items:
        raise UserError(f"{options.ratings}: no rating names a judged trace in {judgements}")
    wanted = options.criterion or sorted(items)
    unknown = [c for c in wanted if c not in items]
    if unknown:
        raise UserError(f"--criterion: no rated, judged items for {', '.join(unknown)}")
    for name in wanted:
        cases = {i.case_id for i in items[name]}
        if len(cases) < 2:
            raise UserError(f"{options.ratings}: criterion {name}: rated on {len(cases)} case only; evolve needs two "
                            "or more (training and validation cases); rate more cases or leave it out with "
                            "--criterion")
    connection = options.model_options or ModelOptions.from_env()
    judge = JudgeSetup(model=build_ref(parse_model_ref(options.judge_model, flag=options.judge_flag), connection),
                       settings=GenerationSettings(temperature=options.judge_temperature, seed=options.seed,
                                                   max_tokens=options.max_tokens))
    optimiser = build_model(options.optimiser_model, connection)
    started = time.perf_counter()

    def repeated(name: str) -> Callable[[RepeatResult], None]:
        return lambda x: progress.advance(f"{name} · repeat {x.repeat + 1}",
                                          f"train MAE {x.train_initial.mae:.3f} -> {x.train_descendant.mae:.3f}")

    async def go() -> list[CriterionResult]:
        try:
            return [await evolve_criterion(rubric, next(c for c in rubric.criteria if c.id == name), items[name],
                                           judge=judge, optimiser=optimiser, population=options.population,
                                           generations=options.generations, repeats=options.repeats,
                                           train_fraction=options.train_fraction, seed=options.seed,
                                           on_repeat=repeated(name))
                    for name in wanted]
        finally:
            await judge.model.aclose()
            await optimiser.aclose()

    with ItemProgress("repeats", len(wanted) * options.repeats) as progress:
        results = await go()
    elapsed = time.perf_counter() - started
    out = options.out or judgements / "calibration"
    paths = _write(out, rubric, results, options, judgements, elapsed)
    rated = sum(len(items[name]) for name in wanted)
    return Evolved(rubric=rubric, results=results, files=paths, rated=rated, unmatched=unmatched, seconds=elapsed)


evolve = sync_twin(aevolve)


def _fmt(stat: dict[str, float | None]) -> str:
    return "–" if stat["mean"] is None or stat["sd"] is None else f"{stat['mean']:.3f} ± {stat['sd']:.3f}"


def table_markdown(results: list[CriterionResult]) -> str:
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


def _write(out: Path, rubric: Any, results: list[CriterionResult], options: EvolveOptions, judgements: Path,
           elapsed: float) -> list[Path]:
    promoted = {r.criterion: r for r in results if r.decision()[0] and r.winner is not None}
    md = [f"# Judge-instruction evolution: {rubric.name} v{rubric.version}", "",
          f"MAE against the physicians' mean (mean ± SD over {options.repeats} repeats; population "
          f"{options.population}, {options.generations} generations, training share {options.train_fraction}, "
          f"seed {options.seed}; {elapsed:.1f} s). Training MAE is a re-evaluation: the best initial and best "
          "descendant judged again with a new judge seed, not the selection pass's numbers (ai-consilium.txt, "
          "Table 5).", "",
          table_markdown(results), ""]
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
        data["provenance"] = {"parent": f"{rubric.name} v{rubric.version}", "ratings": str(options.ratings),
                              "judgements": str(judgements), "seed": options.seed, "repeats": options.repeats,
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
