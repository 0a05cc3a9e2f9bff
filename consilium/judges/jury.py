"""Juries of judges: several judge models score the same trace independently, and each item's score is
the jury's verdict (docs/judges.md, Juries; the jury idea: Verga et al. 2024, "Replacing Judges with
Juries").

* Ordinal scales (0–3, 1–5, the four-decision −1/1–5): the **median** of the judges that could evaluate
  the item. For an even number of them the two middle scores may differ: the verdict is the **lower
  middle**, so it stays a point of the rubric's scale with an anchor (physician agreement's κ and
  confusion matrices, and isotonic maps, read scale points) and a jury split evenly never credits
  more than half of it grants. On the four-decision scale −1 (out of scope) sorts lowest, so scope
  is decided by a majority too.
* Binary scales (0/1: match, criterion met): the **majority**; an even split is **not evaluable** with
  the tie as its reason (a coin is never tossed).
* Flags (critical error, unsupported claim): the majority of the evaluable judges; an even split is
  flagged (a possible critical error that half the jury saw is reported).
* A judge that could not evaluate an item is left out of its verdict and counted
  (``verdict.not_evaluable``); when none could, the item is not evaluable.

Every tie is stated in the item's ``verdict.tie``; each judge's own decision is kept in ``votes``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from consilium.judges.aggregate import aggregate
from consilium.judges.record import Judgement, JudgementItem, JuryMember, JuryVerdict, JuryVote
from consilium.judges.rubric import Rubric
from consilium.judges.runner import AnyTrace, JudgeSetup, judge_trace
from consilium.models import CallRecorder
from consilium.models.refs import server_of
from consilium.traces.schema import UsageSummary

__all__ = ["family", "is_binary", "judge_by_jury", "judges_label", "jury_judgement", "member_label", "members_of",
           "one_judge", "verdict"]

#: Suffixes that name a size, a variant or a date of one model family (cut from the end, repeatedly).
_VARIANT = re.compile(r"([-_.](mini|nano|micro|small|lite|turbo|preview|latest|instruct|chat|it|hf|q\d\w*|\d{4}"
                      r"([-_]?\d{2}){0,2}|\d{6,8}|\d+(\.\d+)?[bm]))+$")


def family(model: str) -> str:
    """A model's family, to tell a judge judging its own kind: the model name without its provider
    (``openai:``, ``vllm:``, a ``org/`` path, a ``.gguf`` file's folder and extension), lowercased, with
    size, variant and date suffixes cut (``-mini``, ``-turbo``, ``-2024-08-06``, ``-8b``, ``-instruct``…):
    ``openai:gpt-4o`` and ``openai:gpt-4o-mini`` are both ``gpt-4o``; ``meta-llama/Llama-3-8B-Instruct``
    is ``llama-3``."""
    name = model.strip().rsplit(":", 1)[-1].rsplit("/", 1)[-1].lower().removesuffix(".gguf")
    return _VARIANT.sub("", name) or name


def is_binary(rubric: Rubric) -> bool:
    return sorted(rubric.scale) == [0, 1]


def _median(scores: list[float]) -> tuple[float, str | None]:
    ordered = sorted(scores)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle], None
    low, high = ordered[middle - 1], ordered[middle]
    if low == high:
        return low, None
    return low, (f"even jury ({len(ordered)} evaluable judges), middle scores {_num(low)} and {_num(high)}: "
                 f"the lower middle, {_num(low)}")


def _majority(scores: list[float]) -> tuple[float | None, str | None]:
    yes = sum(1 for s in scores if s >= 1)
    no = len(scores) - yes
    if yes == no:
        return None, f"tie: {yes} of {len(scores)} evaluable judges say 1, {no} say 0: not evaluable"
    return (1.0 if yes > no else 0.0), None


def _flags(votes: list[JudgementItem]) -> tuple[dict[str, bool], list[str]]:
    names = sorted({name for vote in votes for name in vote.flags})
    flags, ties = {}, []
    for name in names:
        raised = sum(1 for vote in votes if vote.flags.get(name))
        flags[name] = 2 * raised >= len(votes)
        if 2 * raised == len(votes):
            ties.append(f"flag {name}: {raised} of {len(votes)} raise it: flagged")
    return flags, ties


def _num(value: float) -> str:
    return f"{value:g}"


def verdict(rubric: Rubric, members: Sequence[JuryMember], items: Sequence[JudgementItem]) -> JudgementItem:
    """The jury's item from each member's item for the same decision (same component and criterion)."""
    votes = [JuryVote(judge=m.judge, model=m.model, score=i.score, not_evaluable=i.not_evaluable, reason=i.reason,
                      rationale=i.rationale, flags=i.flags, failed_calls=i.failed_calls)
             for m, i in zip(members, items, strict=True)]
    counted = [i for i in items if not i.not_evaluable and i.score is not None]
    binary = is_binary(rubric)
    rule: Literal["median", "majority"] = "majority" if binary else "median"
    base = counted[0] if counted else items[0]
    ties: list[str] = []
    score: float | None = None
    if counted:
        scores = [float(i.score) for i in counted if i.score is not None]
        score, tie = _majority(scores) if binary else _median(scores)
        ties += [tie] if tie else []
    flags, flag_ties = _flags(counted)
    ties += flag_ties
    if not counted:
        reason = f"no judge of the jury could evaluate it ({items[0].reason or 'not evaluable'})"
    elif score is None:
        reason = f"the jury is split ({ties[0]})"
    else:
        reason = None
    return JudgementItem(
        component=base.component, criterion=base.criterion, score=score, not_evaluable=score is None,
        reason=reason, rationale=None, flags=flags, detail=base.detail, votes=votes,
        verdict=JuryVerdict(rule=rule, judges=len(items),
                            evaluable=len(counted), not_evaluable=len(items) - len(counted),
                            tie="; ".join(ties) or None))


def jury_judgement(rubric: Rubric, members: Sequence[JuryMember], judgements: Sequence[Judgement], k: int,
                   wall_s: float | None = None) -> Judgement:
    """One judgement from each member's judgement of the same trace: the verdict per item, the
    rubric's aggregates over the verdicts, every judge's calls and usage."""
    first = judgements[0]
    for member, judgement in zip(members, judgements, strict=True):
        keys = [(i.component, i.criterion) for i in judgement.items]
        if keys != [(i.component, i.criterion) for i in first.items]:
            raise RuntimeError(f"judge {member.judge} judged other items of {first.trace} than {members[0].judge}")
    items = [verdict(rubric, members, list(group)) for group in zip(*(j.items for j in judgements), strict=True)]
    recorder = CallRecorder()
    for judgement in judgements:
        for call in judgement.calls:
            recorder.adopt(call)
    notes = list(dict.fromkeys(note for j in judgements for note in j.notes))
    return first.model_copy(update={
        "judge_model": "jury[" + ", ".join(member_label(m) for m in members) + "]", "items": items,
        "aggregates": aggregate(rubric, items, k), "notes": notes,
        "jury": [m.model_copy(update={"decoding": j.decoding}) for m, j in zip(members, judgements, strict=True)],
        "usage": UsageSummary.from_ledger(recorder.ledger), "calls": recorder.calls,
        "started_at": min(j.started_at for j in judgements),
        "wall_s": wall_s if wall_s is not None else max(j.wall_s for j in judgements)})


def members_of(setups: Sequence[JudgeSetup]) -> list[JuryMember]:
    return [JuryMember(judge=s.name or s.model.model_id, model=s.model.model_id, family=family(s.model.model_id))
            for s in setups]


def member_label(member: JuryMember) -> str:
    """A judge as ``judge_model`` names it: its model id, and the server of a judge on its own server
    (``SPEC@BASE_URL``, consilium/models/refs.py), so the same model on two servers is told apart."""
    server = server_of(member.judge)
    return member.model if server is None else f"{member.model}@{server}"


def _label_of(name: str) -> str:
    """``judge_model`` as a lone judge named ``name`` (its spec, or ``SPEC@BASE_URL``) records it: the spec's
    model (``openai:gpt-4o`` → ``gpt-4o``), with its server if it has one."""
    server = server_of(name)
    spec = name if server is None else name[:-len(server) - 1]
    model = spec.partition(":")[2] or spec
    return model if server is None else f"{model}@{server}"


def judges_label(setups: Sequence[JudgeSetup]) -> str:
    """The judges as a judgement they make records them (``judge_model``): one judge's label, or
    ``jury[a, b, …]``."""
    labels = [member_label(m) for m in members_of(setups)]
    return labels[0] if len(labels) == 1 else "jury[" + ", ".join(labels) + "]"


async def judge_by_jury(trace: AnyTrace, trace_name: str, rubric: Rubric, setups: Sequence[JudgeSetup],
                        components: list[str] | None = None) -> Judgement:
    """The trace judged by one judge (its judgement as ever) or by a jury (each judge independently and
    at once, then the verdicts)."""
    if len(setups) == 1:
        judged = await judge_trace(trace, trace_name, rubric, setups[0], components)
        label = judges_label(setups)  # a judge on its own server is named with it
        return judged if judged.judge_model == label else judged.model_copy(update={"judge_model": label})
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    judgements = await asyncio.gather(*(judge_trace(trace, trace_name, rubric, s, components) for s in setups))
    judged = jury_judgement(rubric, members_of(setups), judgements, setups[0].k,
                            wall_s=round(time.perf_counter() - started, 3))
    return judged.model_copy(update={"started_at": started_at})


def one_judge(judgement: Judgement, judge: str) -> Judgement:
    """A jury's judgement as one of its judges made it (``calibrate --judge SPEC``): each item's score,
    not-evaluable and reason are that judge's vote. A judgement of one judge is itself when ``judge`` is
    its model; a judge not on the jury is a :class:`ValueError` naming those who are."""
    if judgement.jury is None:
        if judgement.judge_model in (judge, _label_of(judge)):
            return judgement
        raise ValueError(f"{judgement.trace} was judged by {judgement.judge_model} alone, not by {judge}")
    names = [m.judge for m in judgement.jury]
    if judge not in names:
        raise ValueError(f"{judge} is not on the jury of {judgement.trace} ({', '.join(names)})")
    at = names.index(judge)
    items = []
    for item in judgement.items:
        vote = item.votes[at] if item.votes else None
        if vote is None:
            items.append(item)
            continue
        items.append(item.model_copy(update={"score": vote.score, "not_evaluable": vote.not_evaluable,
                                             "reason": vote.reason, "rationale": vote.rationale,
                                             "flags": vote.flags, "calibrated_score": None}))
    return judgement.model_copy(update={"items": items, "judge_model": member_label(judgement.jury[at])})
