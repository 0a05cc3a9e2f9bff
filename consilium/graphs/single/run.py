"""Run the single-specialist baseline for one case in one or both formats."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from consilium.agents.records import Format
from consilium.cases import Case
from consilium.graphs.base import RunModels, config_record, run_recorded, start_run
from consilium.graphs.running import Latest
from consilium.graphs.single.config import SingleConfig
from consilium.graphs.single.graph import PROMPTS, SingleContext, single_graph
from consilium.graphs.single.trace import SingleTrace
from consilium.models import CallRecorder, for_run
from consilium.models.wrappers import work_item

__all__ = ["run_single", "run_single_case"]

#: assign_roles and answer, two supersteps.
RECURSION_LIMIT = 10


async def run_single(case: Case, fmt: Format, models: RunModels, config: SingleConfig, *, run_id: str,
                     shared: SingleTrace | None = None) -> SingleTrace:
    """One format. A model failure is recorded in the trace (status ``failed``). ``shared``: a trace of this
    case's other format whose specialist answers this one too, its assignment calls copied into this trace
    (so it replays on its own), as the consilium's formats share one panel (ai-consilium.txt, Fig. 2a)."""
    recorder = CallRecorder()
    roles = list(shared.roles) if shared is not None and shared.specialist else []
    for call in (shared.calls if roles and shared is not None else []):
        if call.stage == "role_assignment":
            recorder.adopt(call)
    ctx = SingleContext(specialist_model=for_run(models.panel, recorder, max_repairs=config.max_repairs),
                        moderator_model=for_run(models.moderator, recorder, max_repairs=config.max_repairs),
                        case_text=case.render(), format=fmt, config=config)
    state = Latest({"roles": roles} if roles else {})
    outcome = await run_recorded(lambda: state.follow(single_graph(), ctx, recursion_limit=RECURSION_LIMIT),
                                 start_run(recorder), wall_limit_s=config.wall_limit_s, event="single_failed",
                                 case=case.id, format=fmt)
    assigned = list(state.get("roles") or [])
    primary = next((r for r in assigned if r.primary), None)
    return SingleTrace(
        **outcome.trace_fields(case, run_id=run_id, model=models.panel.model_id,
                               config=config_record(config, PROMPTS)),
        format=fmt, moderator_model=models.moderator.model_id, roles=assigned, role_assignment_shared=bool(roles),
        specialist=primary.id if primary else None, answer=None if outcome.error else state.get("answer"),
    )


async def run_single_case(case: Case, formats: Sequence[Format], models: RunModels, config: SingleConfig, *,
                          run_id: str, shared: SingleTrace | None = None,
                          on_trace: Callable[[SingleTrace], None] | None = None) -> list[SingleTrace]:
    """Every format of one case, one after the other, all answered by one specialist: the one ``shared`` (a
    finished format's trace) names, else the one the first format's assignment chose."""
    traces = []
    with work_item(case.id):  # one case's calls, all formats: admitted by its progress, routed by its id
        for fmt in formats:
            trace = await run_single(case, fmt, models, config, run_id=run_id, shared=shared)
            if shared is None and trace.specialist:
                shared = trace  # the others take this format's specialist
            if on_trace is not None:
                on_trace(trace)
            traces.append(trace)
    return traces
