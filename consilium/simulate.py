"""Run a consilium for one case in one or both formats and write one trace per format.

The role assignment is made once per case and model and reused by the second
format (ai-consilium.txt, Fig. 2a and 5a); its calls are copied into that
format's trace so every trace is complete and replays on its own.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from consilium.agents.prompting import prompt_hashes
from consilium.agents.records import AssignedRole, Format
from consilium.cases import Case
from consilium.errors import BudgetExceededError, ModelError
from consilium.graphs.consilium import ConsiliumConfig, ConsiliumContext, build_graph
from consilium.graphs.consilium.graph import RECURSION_LIMIT
from consilium.log import get_logger
from consilium.models import CallRecord, CallRecorder, ChatModel, UsageLedger, for_run
from consilium.traces.build import base_fields
from consilium.traces.schema import Trace

__all__ = ["RunModels", "run_case", "run_format"]

log = get_logger(__name__)


@dataclass(frozen=True)
class RunModels:
    """The shared model stacks for the named roles (STYLE.md 4)."""

    panel: ChatModel
    moderator: ChatModel


def config_record(config: BaseModel) -> dict[str, Any]:
    return {**config.model_dump(), "prompts": prompt_hashes()}


async def run_format(case: Case, fmt: Format, models: RunModels, config: ConsiliumConfig, *, run_id: str,
                     shared_roles: list[AssignedRole] | None = None,
                     shared_calls: list[CallRecord] | None = None) -> Trace:
    """Run the graph for one format. A model failure is recorded in the trace (status ``failed``)."""
    recorder = CallRecorder(UsageLedger(config.budget_tokens))
    for call in shared_calls or []:
        recorder.adopt(call)
    ctx = ConsiliumContext(
        panel_model=for_run(models.panel, recorder, max_repairs=config.max_repairs),
        moderator_model=for_run(models.moderator, recorder, max_repairs=config.max_repairs),
        case_text=case.render(), format=fmt, config=config,
    )
    graph = build_graph(ctx)
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    state: dict[str, Any] = {"roles": shared_roles} if shared_roles else {}
    error: str | None = None
    try:
        # Stream the state after each step so a failed run still records how far it got.
        async with asyncio.timeout(config.wall_limit_s):
            async for values in graph.astream(state, config={"recursion_limit": RECURSION_LIMIT},
                                              stream_mode="values"):
                state = values
    except TimeoutError:
        error = f"WallClockLimit: the run exceeded its wall-clock limit of {config.wall_limit_s:g} s"
        log.error("consilium_failed", case=case.id, format=fmt, error=error)
    except (ModelError, BudgetExceededError) as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.error("consilium_failed", case=case.id, format=fmt, error=error)
    reports = list(state.get("reports", []))
    return Trace(
        **base_fields(case, run_id=run_id, model=models.panel.model_id, config=config_record(config),
                      recorder=recorder, started_at=started_at, wall_s=time.perf_counter() - started, error=error),
        format=fmt, moderator_model=models.moderator.model_id,
        roles=list(state.get("roles") or shared_roles or []), role_assignment_shared=bool(shared_roles),
        opinions=sorted(state.get("opinions", []), key=lambda o: o.role), reports=reports,
        rounds=list(state.get("rounds", [])), stop_reason=state.get("stop_reason"),
        final_report=reports[-1] if reports and not error else None,
    )


async def run_case(case: Case, formats: list[Format], models: RunModels, config: ConsiliumConfig, *,
                   run_id: str) -> list[Trace]:
    traces: list[Trace] = []
    roles: list[AssignedRole] | None = None
    assignment_calls: list[CallRecord] = []
    for fmt in formats:
        trace = await run_format(case, fmt, models, config, run_id=run_id, shared_roles=roles,
                                 shared_calls=assignment_calls)
        traces.append(trace)
        if roles is None and trace.roles:
            roles = trace.roles
            assignment_calls = [c for c in trace.calls if c.stage == "role_assignment"]
    return traces
