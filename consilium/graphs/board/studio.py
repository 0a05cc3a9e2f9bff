"""The tumor board's Studio graph, as its protocol declares it (``BoardProtocol.studio``; the one entry for every
protocol is consilium/graphs/dev.py; docs/studio.md).

Each run reads its settings from ``configurable`` (the model specs, the case as a path or
inline, the mode and a few run settings), runs the meeting as ``consilium board`` does and returns the
trace: its status, panel, turns, transcript, conclusion and format checks, and the trace itself.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from consilium.agents.records import AssignedRole
from consilium.graphs.base import RunModels
from consilium.graphs.board.agents import PROMPTS
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.graph import board_graph
from consilium.graphs.board.run import Mode, run_board, slide_images
from consilium.graphs.board.trace import BoardTrace
from consilium.graphs.board.transcript import Turn
from consilium.graphs.board.validate import FormatReport
from consilium.graphs.studio import StudioJob, StudioOutput, StudioSettings, StudioSpec

__all__ = ["DEFAULT_CASE", "SPEC", "BoardSettings", "BoardStudioOutput"]

DEFAULT_CASE = Path(__file__).resolve().parents[3] / "examples" / "cases" / "tumor-board-nsclc.yaml"


class BoardSettings(StudioSettings, total=False):
    """A board dev run's ``configurable`` keys."""

    mode: Annotated[Mode, Field(description="agents: a moderator and specialist agents, turn by turn; single: "
                                            "one call writes the whole meeting (default: agents)")]
    max_turns: Annotated[int, Field(ge=2, description="turns before the limit closes the meeting (agents mode; "
                                                      "default 12)")]


class BoardStudioOutput(StudioOutput, total=False):
    """A board dev run's output: as its trace records them, and the trace."""

    mode: Mode
    roles: list[AssignedRole]
    turns: list[Turn]
    transcript: str
    conclusion: str | None
    stop_reason: Literal["moderator_closed", "turn_limit", "single_call"] | None
    validation: FormatReport | None
    notes: list[str]



async def _run(job: StudioJob) -> BoardTrace:
    mode: Mode = job.settings.get("mode", "agents")
    # An inline case has no folder to find slide images in: its captions are in the case text.
    images = await asyncio.to_thread(slide_images, job.case, job.case_file) if job.case_file else ()
    return await run_board(job.case, mode, RunModels(panel=job.panel, moderator=job.moderator),
                           job.config(BoardConfig, max_turns="max_turns"), run_id=job.run_id, images=images)


SPEC = StudioSpec(BoardSettings, BoardStudioOutput, DEFAULT_CASE, _run, board_graph, (PROMPTS,))
