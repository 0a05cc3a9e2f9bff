"""Run a consilium for one case in one or both formats and write one trace per format.

The role assignment is made once per case and model and reused by the second
format (ai-consilium.txt, Fig. 2a and 5a); its calls are copied into that
format's trace so every trace is complete and replays on its own. Once the
panel is assigned the formats are independent, so the second starts then and
both run side by side: against a server, a case takes the time of one format.
A person at the table (human_run.py) comes in as a :class:`Seat`: this module names what it needs of one, and
the checkpointed run that provides it builds on this module, not the other way round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from consilium.agents.records import AssignedRole, Format
from consilium.cases import Case
from consilium.graphs.base import RunModels, config_record, run_recorded, start_run
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.graph import RECURSION_LIMIT, ConsiliumContext, consilium_graph
from consilium.graphs.consilium.seat import HumanRecord
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.running import Latest
from consilium.models import CallRecord, CallRecorder, UsageLedger, for_run
from consilium.models.wrappers import work_item

__all__ = ["Seat", "run_case", "run_format"]

#: Told the assigned panel and the calls that assigned it, as soon as a run has them.
RolesListener = Callable[[list[AssignedRole], list[CallRecord]], None]


class Seat(Protocol):
    """What a format's run needs of a person's seat (``human_run.HumanRun``): the role asked for, the calls
    to start from, a checkpointed way through the graph, and the person's part of the trace."""

    requested: str

    def restore(self, fmt: Format, recorder: CallRecorder, shared: list[CallRecord] | None) -> None: ...

    async def follow(self, fmt: Format, state: Latest, context: ConsiliumContext, recorder: CallRecorder, *,
                     on_step: Callable[[dict[str, Any], dict[str, Any]], None]) -> None: ...

    def record(self, values: dict[str, Any]) -> HumanRecord | None: ...


async def run_format(case: Case, fmt: Format, models: RunModels, config: ConsiliumConfig, *, run_id: str,
                     shared_roles: list[AssignedRole] | None = None,
                     shared_calls: list[CallRecord] | None = None,
                     on_roles: RolesListener | None = None, human: Seat | None = None) -> Trace:
    """Run the graph for one format. A model failure is recorded in the trace (status ``failed``). With
    ``human``, a person plays one member, in a checkpointed run that may pause (human_run.py)."""
    recorder = CallRecorder(UsageLedger(config.budget_tokens))
    if human is not None:
        human.restore(fmt, recorder, shared_calls)  # the calls made before a pause or Ctrl-C, if resumed
    else:
        for call in shared_calls or []:
            recorder.adopt(call)
    ctx = ConsiliumContext(
        panel_model=for_run(models.panel, recorder, max_repairs=config.max_repairs),
        moderator_model=for_run(models.moderator, recorder, max_repairs=config.max_repairs),
        case_text=case.render(), format=fmt, config=config, human=human.requested if human is not None else None,
    )
    state = Latest({"roles": shared_roles} if shared_roles else {})

    def step(before: dict[str, Any], after: dict[str, Any]) -> None:
        if on_roles is not None and after.get("roles") and not before.get("roles"):
            on_roles(after["roles"], [c for c in recorder.calls if c.stage == "role_assignment"])

    def body() -> Any:
        if human is not None:
            return human.follow(fmt, state, ctx, recorder, on_step=step)
        return state.follow(consilium_graph(), ctx, recursion_limit=RECURSION_LIMIT, on_step=step)

    outcome = await run_recorded(
        body, start_run(recorder), wall_limit_s=config.wall_limit_s,
                                 event="consilium_failed", case=case.id, format=fmt)
    reports = list(state.get("reports", []))
    error = outcome.error
    return Trace(
        **outcome.trace_fields(case, run_id=run_id, model=models.panel.model_id, config=config_record(config)),
        format=fmt, moderator_model=models.moderator.model_id,
        roles=list(state.get("roles") or shared_roles or []), role_assignment_shared=bool(shared_roles),
        opinions=sorted(state.get("opinions", []), key=lambda o: o.role), reports=reports,
        rounds=list(state.get("rounds", [])), stop_reason=state.get("stop_reason"),
        final_report=reports[-1] if reports and not error else None,
        human=human.record(state.values) if human is not None else None,
    )


async def run_case(case: Case, formats: list[Format], models: RunModels, config: ConsiliumConfig, *,
                   run_id: str, shared_roles: list[AssignedRole] | None = None,
                   shared_calls: list[CallRecord] | None = None,
                   on_trace: Callable[[Trace], None] | None = None, human: Seat | None = None) -> list[Trace]:
    """Every format of one case, side by side once the panel is assigned: by the first format's run, or
    before (``shared_roles``, from a finished trace). ``on_trace`` gets each trace as soon as it is done."""
    if not formats:
        return []

    async def one(fmt: Format, roles: list[AssignedRole] | None, calls: list[CallRecord] | None,
                  on_roles: RolesListener | None = None) -> Trace:
        trace = await run_format(case, fmt, models, config, run_id=run_id, shared_roles=roles, shared_calls=calls,
                                 on_roles=on_roles, human=human)
        if on_trace is not None:
            on_trace(trace)
        return trace

    with work_item(case.id):  # one case's calls, all formats: admitted by its progress, routed by its id
        tasks: list[asyncio.Task[Trace]] = []
        try:
            if shared_roles:
                tasks = [asyncio.create_task(one(fmt, shared_roles, shared_calls)) for fmt in formats]
            else:
                assigned: asyncio.Future[tuple[list[AssignedRole], list[CallRecord]]] = (
                    asyncio.get_running_loop().create_future())

                def share(roles: list[AssignedRole], calls: list[CallRecord]) -> None:
                    if not assigned.done():
                        assigned.set_result((roles, calls))

                tasks = [asyncio.create_task(one(formats[0], None, None, share))]
                waiting: list[asyncio.Future[Any]] = [tasks[0], assigned]
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                # No panel (the first format failed before assigning one): each other format assigns its own.
                roles, calls = assigned.result() if assigned.done() else (None, None)
                tasks += [asyncio.create_task(one(fmt, roles, calls)) for fmt in formats[1:]]
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
