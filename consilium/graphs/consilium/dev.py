"""The consilium for LangGraph's dev server and Studio (``langgraph dev``; langgraph.json; docs/studio.md).

``make_graph`` returns the consilium's dev graph at once (no I/O: the server calls it on its event loop for
every run). Each run reads its settings from ``configurable`` (the model specs, the case as a path or
inline, the format and a few run settings), runs one format of the case as ``consilium simulate`` does and
returns the trace: its status, panel, opinions, reports and rounds, and the trace itself.
"""

from __future__ import annotations

import asyncio
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field

from consilium.agents.records import AssignedRole, Format, Opinion, Report, Round, StopReason
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.graph import consilium_graph
from consilium.graphs.consilium.run import run_format
from consilium.graphs.studio import StudioJob, StudioOutput, StudioSettings, studio_graph, with_defaults
from consilium.traces.io import new_run_id, trace_path, write_trace

__all__ = ["DEFAULT_CASE", "ConsiliumSettings", "ConsiliumStudioOutput", "make_graph", "studio_consilium_graph"]

DEFAULT_CASE = Path(__file__).resolve().parents[3] / "examples" / "cases" / "diagnostic-myocarditis.yaml"


class ConsiliumSettings(StudioSettings, total=False):
    """A consilium dev run's ``configurable`` keys."""

    format: Annotated[Format, Field(description="the panel's format: free-form or structured (default: "
                                                "structured)")]
    max_rounds: Annotated[int, Field(ge=1, description="review rounds before the run stops with round_limit "
                                                       "(default 5)")]


class ConsiliumStudioOutput(StudioOutput, total=False):
    """A consilium dev run's output: as its trace records them, and the trace."""

    format: Format
    roles: list[AssignedRole]
    opinions: list[Opinion]
    reports: list[Report]
    rounds: list[Round]
    stop_reason: StopReason | None
    final_report: Report | None


FIELDS = ("format", "roles", "opinions", "reports", "rounds", "stop_reason", "final_report")


async def _run(job: StudioJob) -> tuple[BaseModel, Path | None]:
    config = job.config(ConsiliumConfig, max_rounds="max_rounds")
    fmt: Format = job.settings.get("format", "structured")
    run_id = new_run_id(job.case.id)
    trace = await run_format(job.case, fmt, RunModels(panel=job.panel, moderator=job.moderator), config,
                             run_id=run_id)
    out = job.settings.get("out")
    if not out:
        return trace, None
    path = trace_path(Path(out), run_id, job.case.id, fmt)
    return trace, await asyncio.to_thread(write_trace, path, trace)


@cache
def studio_consilium_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled dev graph, built once per process."""
    return studio_graph("consilium", ConsiliumSettings, ConsiliumStudioOutput, default_case=DEFAULT_CASE, run=_run,
                        subgraph=consilium_graph(), fields=FIELDS)


def make_graph(config: RunnableConfig) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The dev graph; the documented keys of ``config``'s ``configurable`` become its runs' defaults (a run's
    own ``configurable`` wins). Nothing is read or loaded here: that happens when a run starts."""
    return with_defaults(studio_consilium_graph(), ConsiliumSettings, config)
