"""Criterion-local evolution of judge instructions (ai-consilium.txt, Table 5: best initial vs best
descendant, MAE against physicians on training re-evaluation and on validation).

For one criterion: a population of instruction texts (the rubric's own definition plus optimiser
rewrites) is scored by fitness = MAE of the judge against the physicians' mean on the training
cases; an optimiser model edits the fittest from their worst disagreements; the best of each
generation survives. The best initial and the best descendant are then judged again on the
training cases (re-evaluation: new judge calls with another seed, so neither a sampling judge's
luck in the selection pass nor the response cache carries over) and on the validation cases. Each
repeat uses its own seeds and split; results are mean ± SD over repeats. A not-evaluable judgement
counts as the largest possible error, so a candidate cannot win by declining to score. On a rubric with
an out-of-scope score (:mod:`consilium.judges.scope`) the physicians' mean is over their in-scope
ratings (an output none of them rated in scope has no target and is left out), and a judge putting a
rated output out of scope counts as the largest error too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from consilium.calibration.evolution_results import Candidate, CriterionResult, Evaluation, RepeatResult
from consilium.calibration.isotonic import split_cases
from consilium.calibration.pairs import Judged, match_ratings
from consilium.calibration.ratings import Rating
from consilium.errors import UserError
from consilium.graphs.registry import read_trace
from consilium.judges.prompting import anchors_text
from consilium.judges.record import Judgement
from consilium.judges.rubric import Criterion, Rubric
from consilium.judges.runner import JudgeSetup, judge_trace
from consilium.judges.scope import in_scope, scale_points
from consilium.models import CallRecorder, CallTag, ChatModel, GenerationSettings, Message, ModelRequest, OutputSchema
from consilium.models import for_run as run_layers
from consilium.redact import clip
from consilium.traces.schema import TraceBase

__all__ = ["REEVALUATION_SEED_OFFSET", "Item", "evolve_criterion", "judge_seeds", "rated_items"]

#: Added to a repeat's selection seed for its re-evaluation and validation calls: the seed is part of
#: the request, hence of the response-cache key, so re-evaluation never gets the selection pass's answers.
REEVALUATION_SEED_OFFSET = 100_000

_OPTIMISER = OutputSchema(name="RevisedInstruction", json_schema={
    "type": "object", "additionalProperties": False, "required": ["instruction"],
    "properties": {"instruction": {"type": "string", "minLength": 20, "maxLength": 1500}}})


@dataclass(frozen=True)
class Item:
    """One rated output: a judged trace's component and the mean of the physicians' scores of it."""

    case_id: str
    component: str
    trace: TraceBase
    target: float
    label: str = ""  # the judged trace: run, panel model, variant, trace file
    ratings: int = 1


def rated_items(ratings: list[Rating], judgements: Sequence[tuple[Path, Judgement]],
                origin: str | Path | None = None,
                out_of_scope: float | None = None) -> tuple[dict[str, list[Item]], int]:
    """Per criterion, one :class:`Item` per (judged trace, component) the physicians rated, its target
    the mean of the in-scope ratings (none is ``out_of_scope``) paired with exactly that trace
    (:func:`match_ratings`: case, variant or format, panel model, run, trace); a judged trace nobody
    rated in scope gets none, and a rating that could belong to several judged traces is refused. Also
    returns how many ratings named no judged trace."""
    groups: dict[tuple[Path, str, str], list[float]] = defaultdict(list)
    judged_by_path: dict[Path, Judged] = {}
    unmatched = 0
    for rating, judged in match_ratings(ratings, judgements, origin):
        if judged is None or judged.path is None:
            unmatched += 1
            continue
        judged_by_path[judged.path] = judged
        scores = groups[(judged.path, rating.component, rating.criterion)]
        if rating.score != out_of_scope:
            scores.append(rating.score)
    items: dict[str, list[Item]] = {}
    traces: dict[Path, TraceBase] = {}
    for (path, component, criterion), scores in sorted(groups.items()):
        if not scores:  # every physician put it out of scope: no point to aim at
            continue
        judged = judged_by_path[path]
        if path not in traces:
            trace_file = path.parent / judged.judgement.trace
            if not trace_file.is_file():
                raise UserError(f"{path}: trace: {judged.judgement.trace} is not beside the judgement "
                                "(evolve judges the traces again)")
            traces[path] = read_trace(trace_file)
        items.setdefault(criterion, []).append(Item(judged.judgement.case_id, component, traces[path],
                                                    statistics.fmean(scores), judged.describe(), len(scores)))
    return items, unmatched


def judge_seeds(seed: int, repeat: int) -> tuple[int, int]:
    """The judge's seed in a repeat's selection pass and in its re-evaluation and validation."""
    return seed + repeat, seed + repeat + REEVALUATION_SEED_OFFSET


def _variant(rubric: Rubric, criterion: Criterion, instruction: str) -> Rubric:
    return rubric.model_copy(update={"criteria": [criterion.model_copy(update={"definition": instruction})]})


def _with_seed(setup: JudgeSetup, seed: int) -> JudgeSetup:
    return dataclasses.replace(setup, settings=setup.settings.model_copy(update={"seed": seed}))


async def _evaluate(candidate: Candidate, items: list[Item], rubric: Rubric, criterion: Criterion,
                    setup: JudgeSetup) -> Evaluation:
    variant = _variant(rubric, criterion, candidate.instruction)
    judgements = await asyncio.gather(*(judge_trace(i.trace, i.case_id, variant, setup, [i.component])
                                        for i in items))
    points = scale_points(rubric)
    worst_error = max(points) - min(points)
    errors = []
    for item, judgement in zip(items, judgements, strict=True):
        found = [x for x in judgement.items if x.criterion == criterion.id]
        score = found[0].score if found else None
        scored = in_scope(score, rubric)
        error = worst_error if scored is None else abs(scored - item.target)
        rationale = (found[0].rationale or found[0].reason or "") if found else "no judgement"
        errors.append((error, f"- judge {score if score is not None else 'not evaluable'}, physicians "
                              f"{item.target:g}: {clip(rationale, 300)}"))
    errors.sort(key=lambda e: -e[0])
    calls = [c for j in judgements for c in j.calls]
    return Evaluation(statistics.fmean(e[0] for e in errors), [text for _, text in errors[:5]], len(calls),
                      sum(c.cached for c in calls), frozenset(c.settings.seed for c in calls))


async def _propose(optimiser: ChatModel, rubric: Rubric, criterion: Criterion, parent: Candidate,
                   settings: GenerationSettings) -> str:
    template = resources.files("consilium.calibration").joinpath("prompts", "optimiser.md").read_text("utf-8")
    prompt = template.format(rubric_title=rubric.title, criterion_name=criterion.name,
                             anchors=anchors_text(rubric, criterion), instruction=parent.instruction,
                             disagreements="\n".join(parent.worst) or "(none recorded)")
    request = ModelRequest(messages=(Message(role="user", content=prompt),), settings=settings, schema=_OPTIMISER,
                           tag=CallTag(stage="calibration", role=criterion.id))
    return str((await optimiser.generate(request)).parsed["instruction"]).strip()


async def _repeat(repeat: int, rubric: Rubric, criterion: Criterion, items: list[Item], judge: JudgeSetup,
                  optimiser: ChatModel, settings: GenerationSettings, population: int, generations: int,
                  train_fraction: float, seed: int) -> RepeatResult:
    train_cases, val_cases = split_cases([i.case_id for i in items], train_fraction, seed + repeat)
    train = [i for i in items if i.case_id in train_cases]
    val = [i for i in items if i.case_id not in train_cases]
    selection_seed, reevaluation_seed = judge_seeds(seed, repeat)
    select, reevaluate = _with_seed(judge, selection_seed), _with_seed(judge, reevaluation_seed)
    rep_settings = settings.model_copy(update={"seed": seed + repeat})
    selection_calls = 0

    async def fit(candidate: Candidate) -> None:
        nonlocal selection_calls
        evaluation = await _evaluate(candidate, train, rubric, criterion, select)
        candidate.train_mae, candidate.worst = evaluation.mae, evaluation.worst
        selection_calls += evaluation.calls

    pool = [Candidate(criterion.definition, "initial", None)]
    for _ in range(population - 1):
        pool.append(Candidate(await _propose(optimiser, rubric, criterion, pool[0], rep_settings), "initial", 0))
    for candidate in pool:
        await fit(candidate)
    initial = list(pool)
    descendants: list[Candidate] = []
    for _ in range(generations):
        parents = sorted(pool, key=lambda c: c.train_mae)[:max(1, population // 2)]
        children = []
        for index in range(population - len(parents)):
            parent = parents[index % len(parents)]
            child = Candidate(await _propose(optimiser, rubric, criterion, parent, rep_settings), "descendant",
                              pool.index(parent) if parent in pool else None)
            await fit(child)
            children.append(child)
        descendants += children
        pool = sorted(parents + children, key=lambda c: c.train_mae)[:population]
    best_initial = min(initial, key=lambda c: c.train_mae)
    best_descendant = min(descendants, key=lambda c: c.train_mae) if descendants else best_initial
    train_initial = await _evaluate(best_initial, train, rubric, criterion, reevaluate)
    val_initial = await _evaluate(best_initial, val, rubric, criterion, reevaluate) if val else None
    if best_descendant is best_initial:
        train_descendant, val_descendant = train_initial, val_initial
    else:
        train_descendant = await _evaluate(best_descendant, train, rubric, criterion, reevaluate)
        val_descendant = await _evaluate(best_descendant, val, rubric, criterion, reevaluate) if val else None
    return RepeatResult(repeat, len(train_cases), len(val_cases), len(train), len(val), selection_seed,
                        reevaluation_seed, best_initial, best_descendant, best_initial.train_mae,
                        best_descendant.train_mae, train_initial, train_descendant, val_initial, val_descendant,
                        selection_calls)


async def evolve_criterion(rubric: Rubric, criterion: Criterion, items: list[Item], *, judge: JudgeSetup,
                           optimiser: ChatModel, population: int = 4, generations: int = 3, repeats: int = 3,
                           train_fraction: float = 0.5, seed: int = 0,
                           optimiser_settings: GenerationSettings | None = None,
                           on_repeat: Callable[[RepeatResult], None] | None = None) -> CriterionResult:
    """Evolve one criterion's instructions ``repeats`` times; the judge's own settings are kept but
    for the seed, which :func:`judge_seeds` sets per repeat and phase. ``on_repeat`` hears of each
    repeat as it ends (a progress bar)."""
    if repeats >= REEVALUATION_SEED_OFFSET:
        raise UserError(f"--repeats: at most {REEVALUATION_SEED_OFFSET - 1}, so that re-evaluation seeds stay apart "
                        "from selection seeds")
    recorder = CallRecorder()
    optimiser_model = run_layers(optimiser, recorder, max_repairs=2)
    settings = optimiser_settings or GenerationSettings(temperature=0.7, max_tokens=600, seed=seed)
    results = []
    for repeat in range(repeats):
        results.append(await _repeat(repeat, rubric, criterion, items, judge, optimiser_model, settings, population,
                                     generations, train_fraction, seed))
        if on_repeat is not None:
            on_repeat(results[-1])
    return CriterionResult(criterion.id, results, len(recorder.calls))
