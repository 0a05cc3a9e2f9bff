"""Criterion-local evolution of judge instructions (ai-consilium.txt, Table 5: best initial vs best
descendant, MAE against physicians on training re-evaluation and on validation).

For one criterion: a population of instruction texts (the rubric's own definition plus optimiser
rewrites) is scored by fitness = MAE of the judge against the physicians' mean on the training
cases; an optimiser model edits the fittest from their worst disagreements; the best of each
generation survives. Each repeat uses its own seed and split; results are mean ± SD over repeats.
A not-evaluable judgement counts as the largest possible error, so a candidate cannot win by
declining to score.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from consilium.calibration.isotonic import split_cases
from consilium.calibration.pairs import Pair
from consilium.judges.prompting import anchors_text
from consilium.judges.rubric import Criterion, Rubric
from consilium.judges.runner import JudgeSetup, judge_trace
from consilium.models import CallRecorder, CallTag, ChatModel, GenerationSettings, Message, ModelRequest, OutputSchema
from consilium.models import for_run as run_layers
from consilium.traces.schema import BoardTrace, Trace, TurnTrace

__all__ = ["Candidate", "CriterionResult", "Item", "evolve_criterion"]

_OPTIMISER = OutputSchema(name="RevisedInstruction", json_schema={
    "type": "object", "additionalProperties": False, "required": ["instruction"],
    "properties": {"instruction": {"type": "string", "minLength": 20, "maxLength": 1500}}})


@dataclass(frozen=True)
class Item:
    """One rated output: its trace, component and the physicians' mean score."""

    case_id: str
    component: str
    trace: Trace | BoardTrace | TurnTrace
    target: float


@dataclass
class Candidate:
    instruction: str
    origin: str  # "initial" or "descendant"
    parent: int | None
    train_mae: float = float("inf")
    worst: list[str] = field(default_factory=list)


@dataclass
class CriterionResult:
    criterion: str
    best_initial_train: list[float]
    best_descendant_train: list[float]
    best_initial_val: list[float]
    best_descendant_val: list[float]
    winner: Candidate | None
    calls: int

    def summary(self) -> dict[str, Any]:
        def stat(values: list[float]) -> dict[str, float | None]:
            return {"mean": statistics.fmean(values) if values else None,
                    "sd": statistics.pstdev(values) if len(values) > 1 else 0.0 if values else None}
        return {"criterion": self.criterion, "train_best_initial": stat(self.best_initial_train),
                "train_best_descendant": stat(self.best_descendant_train),
                "val_best_initial": stat(self.best_initial_val), "val_best_descendant": stat(self.best_descendant_val),
                "repeats": len(self.best_initial_train), "calls": self.calls}


def targets(pairs: list[Pair]) -> dict[tuple[str, str, str], float]:
    scores: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for p in pairs:
        scores[(p.case_id, p.component, p.criterion)].append(p.physician)
    return {key: statistics.fmean(values) for key, values in scores.items()}


def _variant(rubric: Rubric, criterion: Criterion, instruction: str) -> Rubric:
    return rubric.model_copy(update={"criteria": [criterion.model_copy(update={"definition": instruction})]})


async def _fitness(candidate: Candidate, items: list[Item], rubric: Rubric, criterion: Criterion,
                   setup: JudgeSetup) -> tuple[float, list[str]]:
    variant = _variant(rubric, criterion, candidate.instruction)
    judgements = await asyncio.gather(*(judge_trace(i.trace, i.case_id, variant, setup, [i.component])
                                        for i in items))
    worst_error = max(rubric.scale) - min(rubric.scale)
    errors = []
    for item, judgement in zip(items, judgements, strict=True):
        found = [x for x in judgement.items if x.criterion == criterion.id]
        score = found[0].score if found else None
        error = worst_error if score is None else abs(score - item.target)
        rationale = (found[0].rationale or found[0].reason or "") if found else "no judgement"
        errors.append((error, f"- judge {score if score is not None else 'not evaluable'}, physicians "
                              f"{item.target:g}: {rationale[:300]}"))
    errors.sort(key=lambda e: -e[0])
    return statistics.fmean(e[0] for e in errors), [text for _, text in errors[:5]]


async def _propose(optimiser: ChatModel, rubric: Rubric, criterion: Criterion, parent: Candidate,
                   settings: GenerationSettings) -> str:
    template = resources.files("consilium.calibration").joinpath("prompts", "optimiser.md").read_text("utf-8")
    prompt = template.format(rubric_title=rubric.title, criterion_name=criterion.name,
                             anchors=anchors_text(rubric, criterion), instruction=parent.instruction,
                             disagreements="\n".join(parent.worst) or "(none recorded)")
    request = ModelRequest(messages=(Message(role="user", content=prompt),), settings=settings, schema=_OPTIMISER,
                           tag=CallTag(stage="calibration", role=criterion.id))
    return str((await optimiser.generate(request)).parsed["instruction"]).strip()


async def evolve_criterion(rubric: Rubric, criterion: Criterion, items: list[Item], *, judge: JudgeSetup,
                           optimiser: ChatModel, population: int = 4, generations: int = 3, repeats: int = 3,
                           train_fraction: float = 0.5, seed: int = 0,
                           optimiser_settings: GenerationSettings | None = None) -> CriterionResult:
    recorder = CallRecorder()
    optimiser_model = run_layers(optimiser, recorder, max_repairs=2)
    settings = optimiser_settings or GenerationSettings(temperature=0.7, max_tokens=600, seed=seed)
    result = CriterionResult(criterion.id, [], [], [], [], None, 0)
    for repeat in range(repeats):
        train_cases, _ = split_cases([i.case_id for i in items], train_fraction, seed + repeat)
        train = [i for i in items if i.case_id in train_cases]
        val = [i for i in items if i.case_id not in train_cases]
        rep_settings = settings.model_copy(update={"seed": seed + repeat})
        pool = [Candidate(criterion.definition, "initial", None)]
        for _ in range(population - 1):
            pool.append(Candidate(await _propose(optimiser_model, rubric, criterion, pool[0], rep_settings),
                                  "initial", 0))
        for candidate in pool:
            candidate.train_mae, candidate.worst = await _fitness(candidate, train, rubric, criterion, judge)
        initial = list(pool)
        descendants: list[Candidate] = []
        for _ in range(generations):
            parents = sorted(pool, key=lambda c: c.train_mae)[:max(1, population // 2)]
            children = []
            for index in range(population - len(parents)):
                parent = parents[index % len(parents)]
                child = Candidate(await _propose(optimiser_model, rubric, criterion, parent, rep_settings),
                                  "descendant", pool.index(parent) if parent in pool else None)
                child.train_mae, child.worst = await _fitness(child, train, rubric, criterion, judge)
                children.append(child)
            descendants += children
            pool = sorted(parents + children, key=lambda c: c.train_mae)[:population]
        best_initial = min(initial, key=lambda c: c.train_mae)
        best_descendant = min(descendants, key=lambda c: c.train_mae) if descendants else best_initial
        for best, train_list, val_list in ((best_initial, result.best_initial_train, result.best_initial_val),
                                           (best_descendant, result.best_descendant_train,
                                            result.best_descendant_val)):
            train_list.append((await _fitness(best, train, rubric, criterion, judge))[0])
            val_list.append((await _fitness(best, val, rubric, criterion, judge))[0] if val else float("nan"))
        if repeat == 0:
            result.winner = best_descendant
    result.calls = len(recorder.calls)
    return result
