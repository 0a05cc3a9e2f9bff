"""Replay: re-run a trace's graph with the ``replay`` backend and compare the outcome.

No model is called. What must come out identical is the protocol's to say (``compared_fields``): for a
consilium, roles, opinions, every report version, every vote, the stop reason and the run's status; for
a board, the roles, turns, transcript, conclusion, stop reason and format validation; for a Specialist
Turn, the answer; for the single-specialist baseline, the roles, the specialist and its answer. For every
protocol, the replayed run must also make every call the trace records, each as often as recorded: a trace
holding a call its run could not have made (the same call twice, from two processes writing one run) is
different, whatever its fields say.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from consilium.cases import Case
from consilium.errors import UserError
from consilium.graphs.registry import protocol_of
from consilium.models.backends.replay import ReplayModel
from consilium.traces.retired import replay_refusal
from consilium.traces.schema import TraceBase

__all__ = ["compared_fields", "first_difference", "replay_trace", "unmade_call"]


async def replay_trace(trace: TraceBase) -> tuple[TraceBase, ReplayModel]:
    """The trace re-run from its recorded calls, and the replay model (to count what it served). A trace that ran
    a mode this version no longer runs is refused, naming its version (consilium/traces/versions.py)."""
    refusal = replay_refusal(trace)
    if refusal:
        raise UserError(refusal)
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
    """The first differing field (a path such as ``rounds[1].votes[2].vote``), or None if identical; first of
    all, a recorded call the replayed run did not make (:func:`unmade_call`)."""
    unmade = unmade_call(recorded, replayed)
    if unmade:
        return unmade
    old, new = recorded.model_dump(mode="json"), replayed.model_dump(mode="json")
    for name in compared_fields(recorded, replayed):
        found = _diff(name, old[name], new[name])
        if found:
            return found
    return None


def unmade_call(recorded: TraceBase, replayed: TraceBase) -> str | None:
    """The first call of ``recorded`` that its replay did not make, as often as recorded. What makes a call one
    call is the protocol's own run: the replayed run asks for each call it makes by its tag (stage, role,
    round) and request, so a call recorded once more than the run makes (the same vote twice) is left over,
    while calls that legitimately share a tag (a board's turns, a structured answer's repairs) differ in their
    request or are each asked for."""
    made = Counter((c.stage, c.role, c.round, c.request_hash) for c in replayed.calls)
    for position, call in enumerate(recorded.calls):
        key = (call.stage, call.role, call.round, call.request_hash)
        if made[key] == 0:
            return (f"calls[{position}]: recorded call #{call.index} (stage={call.stage} role={call.role} "
                    f"round={call.round}) is one the run does not make: {len(recorded.calls)} calls recorded, "
                    f"{len(replayed.calls)} made by the replayed run")
        made[key] -= 1
    return None
