"""OpenTelemetry spans from LangChain's callbacks: a run, its graph's nodes and its model calls.

:class:`SpanHandler` is a LangChain callback handler, so it sees what LangSmith sees: the graph's chain
runs (the graph, each node, each router) and the chat-model runs that
``consilium/models/wrappers/observed.py`` reports for every model call (or that any LangChain chat model
reports). Each becomes a span under its parent run's span; the graph's own run is the protocol run's span
(:func:`consilium.observe.scope.observe_run`). Chat spans follow the GenAI semantic conventions
(``gen_ai.operation.name`` ``chat``, ``gen_ai.request.model``, ``gen_ai.provider.name``,
``gen_ai.usage.*``, ``gen_ai.response.finish_reasons``) with ``consilium.stage``, ``consilium.role`` and
``consilium.round`` beside them. Spans go to the globally configured TracerProvider (docs/observability.md).
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from consilium.errors import UserError
from consilium.redact import redact, redact_exception

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["HIDDEN_TAG", "SpanHandler", "record_error", "require_otel", "tracer"]

#: LangChain's tag for a run that is plumbing, not a step (LangGraph's channel writes).
HIDDEN_TAG = "langsmith:hidden"

INSTALL = "pip install 'consilium[otel]'"


def require_otel() -> None:
    """Refuse, in one line naming the extra, when OpenTelemetry is not installed."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError as exc:
        raise UserError(f"--otel / CONSILIUM_OTEL: OpenTelemetry is not installed: {INSTALL}") from exc


def tracer() -> Tracer:
    require_otel()
    from opentelemetry import trace

    from consilium.version import __version__

    return trace.get_tracer("consilium", __version__)


def _attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Only what an OpenTelemetry attribute can hold (None and other kinds are left out)."""
    return {k: v for k, v in values.items() if isinstance(v, str | bool | int | float)
            or (isinstance(v, list | tuple) and v and all(isinstance(x, str) for x in v))}


def _chat_attributes(metadata: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    provider = metadata.get("ls_provider")
    return _attributes({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider, "gen_ai.system": provider,
        "gen_ai.request.model": params.get("model") or metadata.get("ls_model_name"),
        "gen_ai.request.temperature": params.get("temperature", metadata.get("ls_temperature")),
        "gen_ai.request.max_tokens": params.get("max_tokens", metadata.get("ls_max_tokens")),
        "gen_ai.request.top_p": params.get("top_p"), "gen_ai.request.seed": params.get("seed"),
        "consilium.stage": metadata.get("stage"), "consilium.role": metadata.get("role"),
        "consilium.round": metadata.get("round"), "consilium.schema": metadata.get("schema"),
    })


def _result_attributes(response: LLMResult) -> dict[str, Any]:
    """Usage, finish reasons and the answering model, from the message's ``usage_metadata`` (else the
    OpenAI-style ``llm_output.token_usage``)."""
    usage: dict[str, Any] = {}
    reasons: list[str] = []
    for generations in response.generations:
        for generation in generations:
            info = generation.generation_info or {}
            if info.get("finish_reason"):
                reasons.append(str(info["finish_reason"]))
            message = getattr(generation, "message", None)
            found = getattr(message, "usage_metadata", None)
            if found:
                usage = {"input": found.get("input_tokens"), "output": found.get("output_tokens"),
                         "cached": (found.get("input_token_details") or {}).get("cache_read"),
                         "reasoning": (found.get("output_token_details") or {}).get("reasoning")}
    llm_output = response.llm_output or {}
    if not usage and isinstance(llm_output.get("token_usage"), Mapping):
        counts = llm_output["token_usage"]
        usage = {"input": counts.get("prompt_tokens"), "output": counts.get("completion_tokens")}
    return _attributes({
        "gen_ai.usage.input_tokens": usage.get("input"), "gen_ai.usage.output_tokens": usage.get("output"),
        "gen_ai.usage.cache_read.input_tokens": usage.get("cached"),
        "gen_ai.usage.reasoning.output_tokens": usage.get("reasoning"),
        "gen_ai.response.finish_reasons": reasons,
        "gen_ai.response.model": llm_output.get("model_name"),
    })


def record_error(span: Span, error: BaseException) -> None:
    """The error as the span's ``exception`` event, its message and stack trace masked (a server's error
    text may echo a key)."""
    shown = redact_exception(error)
    span.record_exception(shown, attributes={
        "exception.message": redact(str(shown)),
        "exception.stacktrace": redact("".join(traceback.format_exception(shown)))})


class SpanHandler(BaseCallbackHandler):
    """Chain and chat-model runs as OpenTelemetry spans, parented by ``parent_run_id``.

    ``root``: the span a graph's own run (no parent run) stands for; without one, that run gets a span
    of its own under the current context. Runs tagged :data:`HIDDEN_TAG` get no span (their children go
    under their parent's). Calls are made inline, in the event loop, since a span costs microseconds.
    """

    run_inline = True

    def __init__(self, tracer: Tracer, root: Span | None = None) -> None:
        self.tracer = tracer
        self.root = root
        #: run id → (its span, whether this handler ends it)
        self._spans: dict[UUID, tuple[Span, bool]] = {}

    def _parent(self, parent_run_id: UUID | None) -> Span | None:
        found = self._spans.get(parent_run_id) if parent_run_id is not None else None
        return found[0] if found is not None else (self.root if parent_run_id is None else None)

    def _start(self, run_id: UUID, parent_run_id: UUID | None, name: str, attributes: dict[str, Any],
               *, client: bool = False) -> None:
        from opentelemetry import trace

        parent = self._parent(parent_run_id)
        context = trace.set_span_in_context(parent) if parent is not None else None
        kind = trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL
        self._spans[run_id] = (self.tracer.start_span(name, context=context, kind=kind, attributes=attributes), True)

    def _end(self, run_id: UUID, attributes: Mapping[str, Any] | None = None,
             error: BaseException | None = None) -> None:
        from opentelemetry.trace import Status, StatusCode

        span, owned = self._spans.pop(run_id, (None, False))
        if span is None:
            return
        if attributes:
            span.set_attributes(attributes)
        if error is not None:
            record_error(span, error)
            span.set_status(Status(StatusCode.ERROR, redact(f"{type(error).__name__}: {error}")))
        if owned:
            span.end()

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, tags: list[str] | None = None,
                       metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        name = str(kwargs.get("name") or (serialized or {}).get("name") or "chain")
        if HIDDEN_TAG in (tags or []):
            parent = self._spans.get(parent_run_id) if parent_run_id is not None else None
            if parent is not None:  # its children go under its parent, which it must not end
                self._spans[run_id] = (parent[0], False)
            return
        if parent_run_id is None and self.root is not None:
            self.root.set_attribute("consilium.graph", name)
            self._spans[run_id] = (self.root, False)
            return
        meta = metadata or {}
        node = meta.get("langgraph_node")
        self._start(run_id, parent_run_id, name, _attributes({
            "langgraph.node": node if node == name else None, "langgraph.step": meta.get("langgraph_step")}))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error=error)

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *,
                            run_id: UUID, parent_run_id: UUID | None = None, tags: list[str] | None = None,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        attributes = _chat_attributes(metadata or {}, kwargs.get("invocation_params") or {})
        model = attributes.get("gen_ai.request.model") or kwargs.get("name") or "model"
        self._start(run_id, parent_run_id, f"chat {model}", attributes, client=True)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, _result_attributes(response))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error=error)

    def close(self, error: BaseException | None = None) -> None:
        """End what a cancelled run left open (LangGraph may not report a cancelled node's end)."""
        for run_id in list(self._spans):
            self._end(run_id, error=error)
