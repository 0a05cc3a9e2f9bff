"""Scores of the original and the ablated arms, both sides by the same judges.

A pair compares two scores only when one judge (or one jury, with its verdict rule) made both. The judges are
the cohort's (its ``judge_model`` and ``jury_models``) unless ``--judge-model`` names others. An original's
judgement beside its trace is read when those same judges made it (:func:`not_reused`: the same judge model, or
the same jury in the same order, the same judge prompt and sampling settings); otherwise, or when it has none,
the original is judged here, into the ablation's ``originals/`` folder, never into the cohort's. Every completed
ablated arm is judged by the same judges. An arm's score for a rubric is the mean of the numeric per-output
items of its ``conclusion`` (the final report, or the baseline's answer: what each ablation changes); whole-case
criteria, items not evaluable and decisions out of scope (the four-decision rubric's −1, no point of its scale)
are left out (the four-decision rubric's score is its weighted mean, App. E.2), and an arm without one scored
item has no score (its pair is left out and counted).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from consilium.ablation.run import AblatedArm
from consilium.ablation.source import Cohort, OriginalArm, read_judgement
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.judges.jury import judges_label as jury_label
from consilium.judges.jury import members_of
from consilium.judges.many import judge_files
from consilium.judges.prompting import judge_prompt_hash
from consilium.judges.record import Judgement
from consilium.judges.rubric import Rubric
from consilium.judges.runner import AnyTrace, JudgeSetup
from consilium.judges.scope import in_scope
from consilium.judges.scoring import weighted_decisions
from consilium.runfolder.layout import judgement_path

__all__ = ["SCORED_COMPONENT", "Judged", "Scores", "arm_score", "judge_arms", "judges_label", "made_by", "not_reused"]

#: The component an arm's score is read from.
SCORED_COMPONENT = "conclusion"

#: rubric → trace path → the arm's score (None: nothing scored).
Scores = dict[str, dict[Path, float | None]]


@dataclass
class Judged:
    """Both sides' scores, and where the originals' judgements came from."""

    originals: Scores
    ablated: Scores
    read: int = 0  #: originals' judgements read from the cohort (made by the same judges)
    made: int = 0  #: originals judged here
    #: why each of the cohort's judgements that was not reused was not (:func:`not_reused`)
    not_reused: list[str] = field(default_factory=list)


def judges_label(setups: Sequence[JudgeSetup]) -> str:
    """The judges as a judgement they make records them (``judge_model``): a model id (with its server, for a
    judge on its own), or ``jury[a, b, …]`` (consilium/judges/jury.py)."""
    return jury_label(setups)


def not_reused(judgement: Judgement, setups: Sequence[JudgeSetup], rubric: Rubric) -> str | None:
    """Why ``judgement`` is not the one these judges make, in a few words; None when it is: the same judge
    model (a jury: the same judges, by spec and model, in the same order, so the same verdict rule over the
    same votes), the same prompt and rubric (``prompt_hash``), and the same sampling settings (all but the
    time-out, which shapes no answer)."""
    members = None if len(setups) == 1 else [(m.judge, m.model) for m in members_of(setups)]
    jury = None if judgement.jury is None else [(m.judge, m.model) for m in judgement.jury]
    if judgement.judge_model != judges_label(setups) or jury != members:
        return f"by {judgement.judge_model}"
    if judgement.prompt_hash != judge_prompt_hash(rubric):
        return f"by {judgement.judge_model} with another judge prompt or rubric version"
    theirs, ours = (s.model_dump(exclude={"timeout_s"}) for s in (judgement.settings, setups[0].settings))
    if theirs != ours:
        changed = ", ".join(f"{k} {theirs[k]}" for k in theirs if theirs[k] != ours[k])
        return f"by {judgement.judge_model} with other settings ({changed})"
    return None


def made_by(judgement: Judgement, setups: Sequence[JudgeSetup], rubric: Rubric) -> bool:
    """Whether ``judgement`` is the one these judges make (:func:`not_reused`)."""
    return not_reused(judgement, setups, rubric) is None


def arm_score(judgement: Judgement, rubric: Rubric) -> float | None:
    """The mean of the judgement's numeric per-output items on the conclusion, decisions out of scope left out;
    for the four-decision rubric its own score, App. E.2's weighted mean Σ w·(s/5) / Σ w over the decisions in
    scope (opentumorboard.txt L194), as the paper tables and the viewer compute it. None when it has none."""
    whole = {c.id for c in rubric.criteria if c.whole_case}
    items = [item for item in judgement.items if item.component == SCORED_COMPONENT and item.criterion not in whole]
    if rubric.scoring == "weighted_decisions":
        weights = {c.id: c.weight for c in rubric.criteria}
        return weighted_decisions({i.criterion: None if i.score is None else int(i.score) for i in items
                                   if i.criterion in weights}, weights)
    values = [score for item in items if (score := in_scope(item.score, rubric)) is not None]
    return statistics.fmean(values) if values else None


async def judge_arms(cohort: Cohort, ablated: Sequence[AblatedArm], rubrics: Sequence[Rubric],
                     setups: Sequence[JudgeSetup], out: Path, *, limit: int) -> Judged:
    """Every rubric's scores of the originals of ``ablated`` and of its completed arms, by ``setups``."""
    judged = Judged({r.name: {} for r in rubrics}, {r.name: {} for r in rubrics})
    jobs: list[tuple[Rubric, Path]] = []
    where: dict[tuple[str, Path], Path] = {}  # (rubric, trace) → where its judgement goes
    arms: dict[Path, OriginalArm] = {a.path(cohort.run_dir): a for a in dict.fromkeys(x.original for x in ablated)}
    for rubric in rubrics:
        for path, original in arms.items():
            found = read_judgement(judgement_path(path, rubric.name))
            why = None if found is None or not setups else not_reused(found, setups, rubric)
            if found is not None and setups and why is None:
                judged.originals[rubric.name][path] = arm_score(found, rubric)
                judged.read += 1
                continue
            if why is not None:
                judged.not_reused.append(why)
            jobs.append((rubric, path))
            where[(rubric.name, path)] = judgement_path(out / "originals" / original.trace, rubric.name)
        for arm in ablated:
            if arm.after.status == "completed":
                jobs.append((rubric, arm.path))
                where[(rubric.name, arm.path)] = judgement_path(arm.path, rubric.name)
            else:
                judged.ablated[rubric.name][arm.path] = None
    judged.made = sum(1 for _, p in jobs if p in arms)
    if jobs and not setups:
        raise UserError("--judge-model: the cohort names no judge model; give one to judge with")

    def done(position: int, path: Path, trace: AnyTrace, rubric: Rubric, judgement: Judgement) -> None:
        target = where[(rubric.name, path)]
        if path in arms and not (copy := target.with_name(path.name)).is_file():
            # a judgement record names its trace in its own folder: the original's trace goes beside it, so
            # the ablation's folder reads as any run's (jury, view, calibrate, replay)
            write_text_atomic(copy, path.read_text(encoding="utf-8"))
        write_text_atomic(target, judgement.model_dump_json(indent=2) + "\n")
        (judged.originals if path in arms else judged.ablated)[rubric.name][path] = arm_score(judgement, rubric)

    if jobs:
        await judge_files(jobs, setups, done, limit=max(1, limit))
    return judged
