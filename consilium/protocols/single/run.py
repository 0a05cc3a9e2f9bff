"""Run the single-specialist baseline for one case in one or both formats."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from consilium.agents.records import Format
from consilium.cases import Case
from consilium.graphs.running import Latest
from consilium.models import CallRecorder, for_run
from consilium.models.wrappers import work_item
from consilium.protocols.base import RunModels, config_record, run_recorded, start_run
from consilium.protocols.single.config import SingleConfig
from consilium.protocols.single.graph import PROMPTS, SingleContext, single_graph
from consilium.protocols.single.trace import SingleTrace

__all__ = ["run_single", "run_single_case"]

#: assign_roles and answer, two supersteps.
RECURSION_LIMIT = 10


async def run_single(case: Case, fmt: Format, models: RunModels, config: SingleConfig, *, run_id: str) -> SingleTrace:
    """One format. A model failure is recorded in the trace (status ``failed``)."""
    recorder = CallRecorder()
    ctx = SingleContext(specialist_model=for_run(models.panel, recorder, max_repairs=config.max_repairs),
                        moderator_model=for_run(models.moderator, recorder, max_repairs=config.max_repairs),
                        case_text=case.render(), format=fmt, config=config)
    state = Latest()
    outcome = await run_recorded(lambda: state.follow(single_graph(), ctx, recursion_limit=RECURSION_LIMIT),
                                 start_run(recorder), wall_limit_s=config.wall_limit_s, event="single_failed",
                                 case=case.id, format=fmt)
    roles = list(state.get("roles") or [])
    primary = next((r for r in roles if r.primary), None)
    return SingleTrace(
        **outcome.trace_fields(case, run_id=run_id, model=models.panel.model_id,
                               config=config_record(config, PROMPTS)),
        format=fmt, moderator_model=models.moderator.model_id, roles=roles,
        specialist=primary.id if primary else None, answer=None if outcome.error else state.get("answer"),
    )


async def run_single_case(case: Case, formats: Sequence[Format], models: RunModels, config: SingleConfig, *,
                          run_id: str, on_trace: Callable[[SingleTrace], None] | None = None) -> list[SingleTrace]:
    """Every format of one case, one after the other (each assigns its own specialist: the assignment call is
    the same, so the response cache answers the second)."""
    traces = []
    with work_item(case.id):  # one case's calls, all formats: admitted by its progress, routed by its id
        for fmt in formats:
            trace = await run_single(case, fmt, models, config, run_id=run_id)
            if on_trace is not None:
                on_trace(trace)
            traces.append(trace)
    return traces
