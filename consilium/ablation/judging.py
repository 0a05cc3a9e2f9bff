"""Scores of the original and the ablated arms, by the cohort's rubrics and judge model.

The originals keep the judgements the cohort wrote beside their traces; an original without one (a rubric
given with ``--judge`` that the cohort did not judge with) is judged here, and its judgement written under the
ablation's folder, never into the cohort's. Every completed ablated arm is judged with the same judge model.
An arm's score for a rubric is the mean of the numeric per-output items of its ``conclusion`` (the final
report, or the baseline's answer: what each ablation changes); whole-case criteria and items not evaluable
are left out, and an arm without one scored item has no score (its pair is left out and counted).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from consilium.ablation.run import AblatedArm
from consilium.ablation.source import Cohort, OriginalArm, judgement_path, read_judgement
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.judges.many import judge_files
from consilium.judges.record import Judgement
from consilium.judges.rubric import Rubric
from consilium.judges.runner import AnyTrace, JudgeSetup

__all__ = ["SCORED_COMPONENT", "Scores", "arm_score", "judge_arms"]

#: The component an arm's score is read from.
SCORED_COMPONENT = "conclusion"

#: rubric → trace path → the arm's score (None: nothing scored).
Scores = dict[str, dict[Path, float | None]]


def arm_score(judgement: Judgement, rubric: Rubric) -> float | None:
    """The mean of the judgement's numeric per-output items on the conclusion; None when it has none."""
    whole = {c.id for c in rubric.criteria if c.whole_case}
    values = [item.score for item in judgement.items
              if item.component == SCORED_COMPONENT and item.criterion not in whole and item.score is not None]
    return statistics.fmean(values) if values else None


async def judge_arms(cohort: Cohort, ablated: Sequence[AblatedArm], rubrics: Sequence[Rubric],
                     setup: JudgeSetup | None, out: Path, *, limit: int) -> tuple[Scores, Scores, int]:
    """(the originals' scores, the ablated arms' scores, how many originals were judged here)."""
    originals: Scores = {r.name: {} for r in rubrics}
    scores: Scores = {r.name: {} for r in rubrics}
    jobs: list[tuple[Rubric, Path]] = []
    where: dict[tuple[str, Path], Path] = {}  # (rubric, trace) → where its judgement goes
    arms: dict[Path, OriginalArm] = {a.path(cohort.run_dir): a for a in dict.fromkeys(x.original for x in ablated)}
    for rubric in rubrics:
        for path, original in arms.items():
            found = read_judgement(judgement_path(path, rubric.name))
            if found is not None:
                originals[rubric.name][path] = arm_score(found, rubric)
            else:
                jobs.append((rubric, path))
                where[(rubric.name, path)] = judgement_path(out / "originals" / original.trace, rubric.name)
        for arm in ablated:
            if arm.after.status == "completed":
                jobs.append((rubric, arm.path))
                where[(rubric.name, arm.path)] = judgement_path(arm.path, rubric.name)
            else:
                scores[rubric.name][arm.path] = None
    judged_originals = sum(1 for _, p in jobs if p in arms)
    if jobs and setup is None:
        raise UserError("--judge-model: the cohort names no judge model; give one to judge with")

    def done(position: int, path: Path, trace: AnyTrace, rubric: Rubric, judgement: Judgement) -> None:
        write_text_atomic(where[(rubric.name, path)], judgement.model_dump_json(indent=2) + "\n")
        (originals if path in arms else scores)[rubric.name][path] = arm_score(judgement, rubric)

    if jobs and setup is not None:
        await judge_files(jobs, setup, done, limit=max(1, limit))
    return originals, scores, judged_originals
