"""Re-running a cohort's arms as an ablation changes them, every untouched call served from the original.

Each ablated arm runs its protocol's graph (the consilium's with a fixed panel or review switched off, the
single-specialist baseline's) on models wrapped in :class:`~consilium.models.wrappers.reuse.ReusingModel`: a
request that is exactly one the original made gets the original's answer; any other goes to the live model
(the cohort's, or the other moderator). The panel's calls (opinions, votes) are offered to the panel's stack
and the moderator's (role assignment, synthesis, revisions) to the moderator's, unless the moderator is the
thing changed. Each arm counts what it reused and what it asked anew.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from consilium.ablation.kinds import Condition, Kind, conditions
from consilium.ablation.source import Cohort, OriginalArm
from consilium.cases import Case
from consilium.graphs.base import RunModels
from consilium.graphs.registry import get_protocol, protocol_of, read_trace
from consilium.models import ChatModel
from consilium.models.wrappers.reuse import ReusingModel
from consilium.runfolder.layout import trace_name, trace_stem
from consilium.traces.io import write_trace
from consilium.traces.schema import TraceBase

__all__ = ["PANEL_STAGES", "AblatedArm", "Facts", "ablated_path", "facts", "run_ablation"]

#: The consilium's calls on the panel's model; every other stage is the moderator's.
PANEL_STAGES = frozenset({"opinion", "vote"})


@dataclass(frozen=True)
class Facts:
    """What the comparison reads off a trace besides its scores."""

    status: str
    stop_reason: str  #: "" when none (the initial report alone, the baseline, a failed run)
    rounds: int  #: review rounds (0 for the baseline)
    tokens: int  #: input + output tokens of every call after the panel was set (role assignment left out)


def facts(trace: TraceBase) -> Facts:
    """A trace's :class:`Facts`. The role assignment is left out of the tokens because a fixed panel makes none."""
    tokens = sum(c.usage.input_tokens + c.usage.output_tokens for c in trace.calls if c.stage != "role_assignment")
    return Facts(trace.status, getattr(trace, "stop_reason", None) or "", len(getattr(trace, "rounds", None) or []),
                 tokens)


@dataclass(frozen=True)
class AblatedArm:
    original: OriginalArm
    condition: Condition
    before: Facts  #: the original's
    after: Facts  #: the ablated arm's
    trace: TraceBase
    path: Path  #: where its trace was written
    reused: int  #: calls served from the original's trace
    new: int  #: calls the live model answered


def ablated_path(out: Path, original: OriginalArm, condition: Condition) -> Path:
    """The original's path under ``out`` (arms/<model>/<shard>/…), the condition named before ``.trace.json``."""
    return out / trace_name(trace_stem(original.trace), condition.name)


async def _run_one(original: OriginalArm, trace: TraceBase, condition: Condition, panel: ChatModel,
                   moderator: ChatModel, out: Path, run_id: str) -> AblatedArm:
    calls = trace.calls
    panel_stack = ReusingModel(panel, [c for c in calls if c.stage in PANEL_STAGES])
    moderator_stack = ReusingModel(moderator, [] if condition.moderator else
                                   [c for c in calls if c.stage not in PANEL_STAGES])
    protocol = get_protocol(condition.protocol)
    config = protocol.config_model.model_validate(condition.settings)
    variant = protocol_of(trace).variant(trace)
    [ablated] = await protocol.run_arm(Case.model_validate(trace.case), [variant],
                                       RunModels(panel_stack, moderator_stack), config, run_id=run_id)
    path = write_trace(ablated_path(out, original, condition), ablated)
    return AblatedArm(original, condition, facts(trace), facts(ablated), ablated, path,
                      panel_stack.reused + moderator_stack.reused,
                      panel_stack.live + moderator_stack.live)


async def run_ablation(cohort: Cohort, kind: Kind, models: Mapping[str, ChatModel], out: Path, *,
                       moderator: str | None = None, max_rounds: tuple[int, ...] = (), limit: int = 1,
                       on_done: Callable[[AblatedArm], None] | None = None) -> list[AblatedArm]:
    """Every ablated arm of ``kind`` for every completed consilium arm of ``cohort``, ``limit`` at a time, in the
    cohort's order. ``models`` holds each spec the arms need opened: the cohort's models, its moderator,
    ``moderator`` (the other one, for ``--kind moderator``)."""
    settings = cohort.manifest.settings
    gate = asyncio.Semaphore(max(1, limit))
    run_id = out.name

    async def one(original: OriginalArm, trace: TraceBase, condition: Condition) -> AblatedArm:
        panel = models[original.model_spec]
        chair = models[condition.moderator or settings.moderator_model or original.model_spec]
        async with gate:
            done = await _run_one(original, trace, condition, panel, chair, out, run_id)
        if on_done is not None:
            on_done(done)
        return done

    jobs = []
    for original in cohort.arms:
        trace = read_trace(original.path(cohort.run_dir))
        jobs += [one(original, trace, c) for c in conditions(kind, trace, moderator=moderator, max_rounds=max_rounds)]
    return list(await asyncio.gather(*jobs))
