"""Replay: re-run a trace's graph with the ``replay`` backend and compare the outcome.

No model is called. What must come out identical is the protocol's to say (``compared_fields``): for a
consilium, roles, opinions, every report version, every vote, the stop reason and the run's status; for
a board, the roles, turns, transcript, conclusion, stop reason and format validation; for a Specialist
Turn, the answer; for the single-specialist baseline, the roles, the specialist and its answer.
"""

from __future__ import annotations

from typing import Any

from consilium.cases import Case
from consilium.errors import UserError
from consilium.models.backends.replay import ReplayModel
from consilium.protocols.registry import protocol_of
from consilium.traces.schema import TraceBase

__all__ = ["compared_fields", "first_difference", "replay_trace"]


async def replay_trace(trace: TraceBase) -> tuple[TraceBase, ReplayModel]:
    """The trace re-run from its recorded calls, and the replay model (to count what it served)."""
    case = Case.model_validate(trace.case)
    if case.content_hash() != trace.case_hash:
        raise UserError(f"case: the embedded case of {trace.case_id} does not match its case_hash")
    replay = ReplayModel(trace.calls, model_id=trace.model,
                         supports_images=bool(getattr(trace, "images_sent", False)))
    return await protocol_of(trace).replay(trace, replay), replay


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


def compared_fields(recorded: TraceBase, replayed: TraceBase) -> tuple[str, ...]:
    """The fields compared for this pair: the protocol's, less any whose checks changed since it was recorded."""
    return protocol_of(recorded).compared(recorded, replayed)


def first_difference(recorded: TraceBase, replayed: TraceBase) -> str | None:
    """The first differing field (a path such as ``rounds[1].votes[2].vote``), or None if identical."""
    old, new = recorded.model_dump(mode="json"), replayed.model_dump(mode="json")
    for name in compared_fields(recorded, replayed):
        found = _diff(name, old[name], new[name])
        if found:
            return found
    return None
