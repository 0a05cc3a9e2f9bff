"""``replay:TRACE``: serves the responses recorded in a trace; never calls a model.

Calls are looked up by their tag (stage, role, round) in recorded order, and
each request must hash identically to the recorded one; anything else raises
:class:`~consilium.errors.ReplayDivergenceError` naming the first difference.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import ValidationError

from consilium.datafiles import first_error
from consilium.errors import ReplayDivergenceError, UserError
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.recording import CallRecord, request_hash

__all__ = ["ReplayModel", "load_trace_calls"]

_Key = tuple[str, str | None, int | None]


def load_trace_calls(path: str | Path) -> tuple[str, list[CallRecord]]:
    """Read the model id and the call records of a trace file."""
    model_id, calls, _ = _recording(path)
    return model_id, calls


def _recording(path: str | Path) -> tuple[str, list[CallRecord], bool]:
    """The model id and call records of a trace (or judgement) file, and whether they were asked under the
    schema from the first attempt (a judgement recorded in the ``constrained`` decoding order)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{file}: trace not found") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{file}: not a readable JSON trace ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("calls"), list):
        raise UserError(f"{file}: calls: a trace needs a list of recorded calls")
    try:
        calls = [CallRecord.model_validate(c) for c in data["calls"]]
    except ValidationError as exc:
        raise UserError(f"{file}: {first_error(exc, prefix='calls.')}") from None
    model = data.get("model")
    return (model if isinstance(model, str) else (calls[0].model if calls else "replay")), calls, \
        data.get("decoding") == "constrained"


class ReplayModel:
    endpoint = "replay"

    def __init__(self, calls: Iterable[CallRecord], *, model_id: str = "replay",
                 supports_images: bool = False, enforces_schemas: bool = False) -> None:
        self.model_id = model_id
        #: A replay serves what was recorded: it "enforces" a schema where the recording's answers were asked
        #: under one from the first attempt (a judgement recorded in the constrained order), so a judge
        #: replaying it asks in the order recorded (consilium/judges/decoding.py); anything else enforces nothing.
        self.enforces_schemas = enforces_schemas
        # As the recorded model had it, so the replayed run builds the same messages.
        self.supports_images = supports_images
        calls = list(calls)
        # The recorded model's own stage budgets, so the replayed run sends the same max_tokens.
        self.stage_max_tokens: Mapping[str, int] = {c.stage: c.stage_limit for c in calls
                                                    if c.stage_limit is not None}
        self._queues: dict[_Key, deque[CallRecord]] = defaultdict(deque)
        for call in sorted(calls, key=lambda c: c.index):
            self._queues[(call.stage, call.role, call.round)].append(call)
        self.served = 0

    @classmethod
    def from_trace(cls, path: str | Path) -> ReplayModel:
        model_id, calls, constrained = _recording(path)
        return cls(calls, model_id=model_id, enforces_schemas=constrained)

    def remaining(self) -> int:
        return sum(len(q) for q in self._queues.values())

    async def generate(self, request: ModelRequest) -> ModelResponse:
        tag = request.tag
        where = f"stage={tag.stage} role={tag.role} round={tag.round}"
        queue = self._queues.get((tag.stage, tag.role, tag.round))
        if not queue:
            raise ReplayDivergenceError(f"{where}: the trace holds no further recorded call")
        record = queue[0]
        if request_hash(request) != record.request_hash:
            raise ReplayDivergenceError(f"{where}: the request differs from recorded call #{record.index} "
                                        f"({_first_difference(request, record)})")
        queue.popleft()
        self.served += 1
        return ModelResponse(text=record.response, usage=record.usage, latency_ms=0.0, model=record.model,
                             cached=record.cached, finish_reason=record.finish_reason, reasoning=record.reasoning,
                             omitted_settings=tuple(record.omitted_settings), prices=record.prices)

    async def aclose(self) -> None:
        return None


def _first_difference(request: ModelRequest, record: CallRecord) -> str:
    for i, (new, old) in enumerate(zip(request.messages, record.messages, strict=False)):
        if new != old:
            return f"message {i} ({new.role}) differs"
    if len(request.messages) != len(record.messages):
        return f"{len(request.messages)} messages instead of {len(record.messages)}"
    if request.settings.model_dump(exclude={"timeout_s"}) != record.settings.model_dump(exclude={"timeout_s"}):
        return "generation settings differ"
    return "output schema differs"
