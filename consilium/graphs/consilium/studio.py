"""The consilium's Studio graph, as its protocol declares it (``ConsiliumProtocol.studio``; the one entry for every
protocol is consilium/graphs/dev.py; docs/studio.md).

Each run reads its settings from ``configurable`` (the model specs, the case as a path or inline, the format and
a few run settings), runs one format of the case as ``consilium simulate`` does and returns the trace: its
status, panel, opinions, reports and rounds, and the trace itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from consilium.agents.records import AssignedRole, Format, Opinion, Report, Round, StopReason
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.graph import consilium_graph
from consilium.graphs.consilium.run import run_format
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.studio import StudioJob, StudioOutput, StudioSettings, StudioSpec

__all__ = ["DEFAULT_CASE", "SPEC", "ConsiliumSettings", "ConsiliumStudioOutput"]

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



async def _run(job: StudioJob) -> Trace:
    fmt: Format = job.settings.get("format", "structured")
    return await run_format(job.case, fmt, RunModels(panel=job.panel, moderator=job.moderator),
                            job.config(ConsiliumConfig, max_rounds="max_rounds"), run_id=job.run_id)


SPEC = StudioSpec(ConsiliumSettings, ConsiliumStudioOutput, DEFAULT_CASE, _run, consilium_graph)
