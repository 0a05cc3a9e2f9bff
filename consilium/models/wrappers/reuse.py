"""Serve a recorded answer where a request is exactly a recorded call's, and ask the model otherwise.

``consilium ablate`` re-runs a finished arm with one thing changed (docs/ablations.md). Every call the change
does not touch asks what the original asked, so it gets the original's answer, as replay serves it
(backends/replay.py): same tag (stage, role, round) and same ``request_hash`` (messages, settings, schema).
Any other call goes to ``inner``, the live model. Each recorded call serves once, in recorded order, so a
repeated request gets the answers it got, then the model's. Only the calls of the model ``inner`` is may be
given: a recorded answer of one model never stands in for another's.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable

from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel
from consilium.models.wrappers.recording import CallRecord, request_hash

__all__ = ["ReusingModel"]

_Key = tuple[str, str | None, int | None, str]


class ReusingModel(WrapperModel):
    """``inner`` with ``calls`` served from their record; counts what it served (``reused``) and asked (``live``)."""

    def __init__(self, inner: ChatModel, calls: Iterable[CallRecord]) -> None:
        super().__init__(inner)
        self._recorded: dict[_Key, deque[CallRecord]] = defaultdict(deque)
        for call in sorted(calls, key=lambda c: c.index):
            self._recorded[(call.stage, call.role, call.round, call.request_hash)].append(call)
        self.reused = 0
        self.live = 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        tag = request.tag
        queue = self._recorded.get((tag.stage, tag.role, tag.round, request_hash(request)))
        if not queue:
            self.live += 1
            return await self.inner.generate(request)
        record = queue.popleft()
        self.reused += 1
        return ModelResponse(text=record.response, usage=record.usage, latency_ms=0.0, model=record.model,
                             cached=record.cached, finish_reason=record.finish_reason, reasoning=record.reasoning,
                             omitted_settings=tuple(record.omitted_settings), prices=record.prices)

    async def aclose(self) -> None:
        """Nothing: the live model is shared by every arm, and closed by whoever opened it."""
        return None
