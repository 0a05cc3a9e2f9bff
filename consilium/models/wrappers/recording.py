"""Recording of every model call, for the trace and the usage ledger (the last wrapper before the model)."""

from __future__ import annotations

import hashlib
import json
import time
import weakref
from collections import defaultdict, deque
from collections.abc import Callable
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from consilium.models.answers import answer_problem
from consilium.models.pricing import Prices
from consilium.models.protocol import ChatModel
from consilium.models.structured import OutputInvalid
from consilium.models.tokens import count_message_tokens
from consilium.models.types import CallTag, GenerationSettings, Message, ModelRequest, ModelResponse
from consilium.models.usage import Usage, UsageLedger
from consilium.models.wrappers.base import WrapperModel

__all__ = ["CallRecord", "CallRecorder", "RecordingModel", "request_hash"]


#: Digests by the id of the request they were made of, while it lives: a request is frozen, and the cache's key
#: and the call's record both digest the same one (each a serialisation of every message).
_digests: dict[int, tuple[weakref.ref[ModelRequest], str]] = {}


def request_hash(request: ModelRequest) -> str:
    """A digest of what the model was asked: messages, settings (but not the timeout) and schema; made once
    per request object (a changed request is a new object: ``model_copy``), then looked up."""
    key = id(request)
    known = _digests.get(key)
    if known is not None and known[0]() is request:
        return known[1]
    digest = _digest(request)
    # The entry leaves with its request, before the id can name another object.
    _digests[key] = (weakref.ref(request, partial(_forget, key)), digest)
    return digest


def _forget(key: int, _gone: object) -> None:
    _digests.pop(key, None)


def _digest(request: ModelRequest) -> str:
    schema = request.output_schema
    payload = {
        "messages": [m.model_dump() for m in request.messages],
        "settings": request.settings.model_dump(exclude={"timeout_s"}),
        "schema": (schema.json_schema or {"check": schema.name}) if schema else None,
        "enforce": schema.enforce if schema else None,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CallRecord(BaseModel):
    """One model call as the trace stores it."""

    model_config = ConfigDict(extra="forbid")

    index: int
    # Free text, not types.Stage: a record reads whatever stage the trace it comes from names (a new
    # call's tag is checked when it is made).
    stage: str
    role: str | None = None
    round: int | None = None
    model: str
    messages: list[Message]
    settings: GenerationSettings
    schema_name: str | None = None
    request_hash: str
    response: str
    parsed: Any = Field(default=None, description="the validated JSON value, when a schema was requested")
    usage: Usage
    latency_ms: float
    cached: bool = False
    finish_reason: str | None = None
    error: str | None = Field(default=None, description="why this attempt's answer was not used: empty, cut off "
                                                        "(then asked again) or invalid (then repaired)")
    stage_limit: int | None = Field(default=None, description="the model's own output budget for this stage "
                                                              "(ChatModel.stage_max_tokens), if it has one")
    reasoning: str | None = Field(default=None, description="a reasoning model's thinking, kept out of "
                                                            "``response`` (models/reasoning.py)")
    omitted_settings: list[str] = Field(default_factory=list, description="settings not sent because the model "
                                                                           "refuses them (e.g. temperature)")
    prices: Prices | None = Field(default=None, description="USD per 1M tokens of the model that answered "
                                                            "(models/pricing.py); null: not priced")
    started_at: float


class CallRecorder:
    """Collects call records and feeds the usage ledger; one per run."""

    def __init__(self, ledger: UsageLedger | None = None) -> None:
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.calls: list[CallRecord] = []
        #: The tag of the latest call attempted (recorded or not): where a failed run stopped.
        self.last_attempt: CallTag | None = None
        #: Called after each call is recorded (a run with a person at the table saves its calls file there, so
        #: that a checkpointed task never outlives the record of its calls, even if the process is killed).
        self.on_record: Callable[[], None] | None = None
        #: Restored calls by tag and request, each served once to a request that asks it again (:meth:`restore`).
        self._restored: defaultdict[tuple[str, str | None, int | None, str], deque[CallRecord]] = defaultdict(deque)

    def adopt(self, call: CallRecord) -> None:
        """Take in a call made elsewhere (a shared role assignment), renumbered for this run."""
        self.calls.append(call.model_copy(update={"index": len(self.calls)}))
        self.ledger.add(call.usage, stage=call.stage, role=call.role, round=call.round, cached=call.cached)

    def restore(self, call: CallRecord) -> None:
        """Take in a call this run made before it stopped (resumed from its checkpoint): adopted, and answered
        again as made (:meth:`remade`) if the resumed run asks it again, as a task cut off before it finished
        does when it starts over, so that no call is made twice or recorded twice."""
        self.adopt(call)
        self._restored[(call.stage, call.role, call.round, call.request_hash)].append(self.calls[-1])

    def remade(self, request: ModelRequest) -> ModelResponse | None:
        """The response of the first restored call not yet asked again that has this request's tag and request,
        if any (it stays recorded once, as first made)."""
        if not self._restored:  # a run that was not resumed: no request to digest
            return None
        tag = request.tag
        queue = self._restored.get((tag.stage, tag.role, tag.round, request_hash(request)))
        if not queue:
            return None
        record = queue.popleft()
        return ModelResponse(text=record.response, parsed=record.parsed, usage=record.usage,
                             latency_ms=record.latency_ms, model=record.model, cached=record.cached,
                             finish_reason=record.finish_reason, reasoning=record.reasoning,
                             omitted_settings=tuple(record.omitted_settings), prices=record.prices)

    def record(self, request: ModelRequest, response: ModelResponse, started_at: float,
               stage_limit: int | None = None) -> Any:
        """Record the call; returns the validated value when a schema was requested and met by a
        complete answer (an empty or cut-off one is never used, whatever it holds)."""
        tag = request.tag
        schema = request.output_schema
        parsed, error = None, None
        problem = answer_problem(response)
        if problem is not None:
            error = problem[1]
        elif schema is not None:
            # Validated here too, so each attempt's record says what was wrong with it.
            try:
                parsed = schema.validate(response.text)
            except OutputInvalid as exc:
                error = str(exc)
        self.calls.append(CallRecord(
            index=len(self.calls), stage=tag.stage, role=tag.role, round=tag.round,
            model=response.model, messages=list(request.messages), settings=request.settings,
            schema_name=schema.name if schema else None, request_hash=request_hash(request),
            response=response.text, usage=response.usage, latency_ms=round(response.latency_ms, 3),
            cached=response.cached, finish_reason=response.finish_reason, started_at=started_at,
            parsed=parsed, error=error, stage_limit=stage_limit, reasoning=response.reasoning,
            omitted_settings=list(response.omitted_settings), prices=response.prices,
        ))
        self.ledger.add(response.usage, stage=tag.stage, role=tag.role, round=tag.round, cached=response.cached)
        if self.on_record is not None:
            self.on_record()
        return parsed


class RecordingModel(WrapperModel):
    """Wraps a model so that every call (each repair attempt included) is recorded.

    The budget is checked before each call, so a run stops before overspending.
    """

    def __init__(self, inner: ChatModel, recorder: CallRecorder) -> None:
        super().__init__(inner)
        self.recorder = recorder

    async def generate(self, request: ModelRequest) -> ModelResponse:
        remade = self.recorder.remade(request)
        if remade is not None:  # asked again after a resume: already made and recorded
            return remade
        self.recorder.last_attempt = request.tag
        if self.recorder.ledger.budget_tokens is not None:  # counting tokens costs time; only with a budget
            projected = count_message_tokens(list(request.messages)) + request.settings.max_tokens
            self.recorder.ledger.check_budget(request.tag.stage, projected=projected)
        started_at = time.time()
        response = await self.inner.generate(request)
        parsed = self.recorder.record(request, response, started_at,
                                      stage_limit=self.stage_max_tokens.get(request.tag.stage))
        # Hand the validated value on, so the repair wrapper does not validate twice.
        return response.model_copy(update={"parsed": parsed}) if parsed is not None else response
