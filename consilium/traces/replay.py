"""Replay: re-run a trace's graph with the ``replay`` backend and compare the outcome.

No model is called. For a consilium, roles, opinions, every report version,
every vote, the stop reason and the run's status must come out identical; for
a board, the roles, turns, transcript, conclusion, stop reason and format
validation; for a Specialist Turn, the answer.
"""

from __future__ import annotations

from typing import Any

from consilium.board.run import run_board, run_turn
from consilium.cases import Case
from consilium.errors import UserError
from consilium.graphs.board import BoardConfig
from consilium.graphs.consilium import ConsiliumConfig
from consilium.models.backends.replay import ReplayModel
from consilium.models.types import ModelRequest, ModelResponse
from consilium.simulate import RunModels, run_format
from consilium.traces.schema import BoardTrace, Trace, TurnTrace

__all__ = ["COMPARED_FIELDS", "first_difference", "older_checks", "replay_trace"]

#: What must come out identical, by trace kind.
COMPARED_FIELDS: dict[str, tuple[str, ...]] = {
    "consilium": ("status", "roles", "opinions", "reports", "rounds", "stop_reason"),
    "board": ("status", "roles", "turns", "transcript", "conclusion", "stop_reason", "validation"),
    "turn": ("status", "answer"),
}
_NOT_SETTINGS = ("prompts", "images", "mode", "moderator_model")

AnyTraceValue = Trace | BoardTrace | TurnTrace


async def replay_trace(trace: AnyTraceValue) -> tuple[AnyTraceValue, ReplayModel]:
    """The trace re-run from its recorded calls, and the replay model (to count what it served)."""
    case = Case.model_validate(trace.case)
    if case.content_hash() != trace.case_hash:
        raise UserError(f"case: the embedded case of {trace.case_id} does not match its case_hash")
    settings = {k: v for k, v in trace.config.items() if k not in _NOT_SETTINGS}
    images = tuple(trace.config.get("images", []))
    replay = ReplayModel(trace.calls, model_id=trace.model,
                         supports_images=bool(getattr(trace, "images_sent", False)))
    replayed: AnyTraceValue
    if isinstance(trace, Trace):
        # A trace whose config has no ``lengths`` was recorded before the shared length budget: its caps.
        replayed = await run_format(case, trace.format, RunModels(panel=replay, moderator=replay),
                                    ConsiliumConfig.model_validate({"lengths": "legacy", **settings}),
                                    run_id=trace.run_id)
    elif isinstance(trace, BoardTrace):
        chair = _AsSeenBy(replay, trace.moderator_images_sent)
        replayed = await run_board(case, trace.mode, RunModels(panel=replay, moderator=chair),
                                   BoardConfig.model_validate(settings), run_id=trace.run_id, images=images)
    else:
        replayed = await run_turn(case, trace.role, trace.question, replay, BoardConfig.model_validate(settings),
                                  run_id=trace.run_id, images=images)
    return replayed, replay


class _AsSeenBy:
    """The replay model as the board's moderator saw it: the same recorded calls, served and counted by
    the one replay model, with the moderator model's own image support (issue 15, item 12)."""

    def __init__(self, inner: ReplayModel, supports_images: bool | None) -> None:
        self.inner = inner
        self.model_id, self.endpoint, self.stage_max_tokens = inner.model_id, inner.endpoint, inner.stage_max_tokens
        self.supports_images = inner.supports_images if supports_images is None else supports_images

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.generate(request)

    async def aclose(self) -> None:
        return None


def _diff(path: str, old: Any, new: Any) -> str | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            found = _diff(f"{path}.{key}", old.get(key), new.get(key))
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            found = _diff(f"{path}[{i}]", a, b)
            if found:
                return found
        if len(old) != len(new):
            return f"{path}: {len(old)} items recorded, {len(new)} replayed"
        return None
    if old != new:
        return f"{path}: recorded {old!r}, replayed {new!r}"
    return None


def older_checks(recorded: AnyTraceValue, replayed: AnyTraceValue) -> bool:
    """True when a board trace's format report was made by an older version of the checks than today's:
    the meeting itself is still compared, its score under the old checks is not."""
    if not isinstance(recorded, BoardTrace) or not isinstance(replayed, BoardTrace):
        return False
    old, new = recorded.validation, replayed.validation
    return old is not None and new is not None and old.rules != new.rules


def first_difference(recorded: AnyTraceValue, replayed: AnyTraceValue) -> str | None:
    """The first differing field (a path such as ``rounds[1].votes[2].vote``), or None if identical."""
    old, new = recorded.model_dump(mode="json"), replayed.model_dump(mode="json")
    for name in COMPARED_FIELDS[recorded.kind]:
        if name == "validation" and older_checks(recorded, replayed):
            continue
        found = _diff(name, old[name], new[name])
        if found:
            return found
    return None
