"""One protocol run as LangChain callbacks and tracers see it: its labels and, with OpenTelemetry, its span.

:func:`observe_run` wraps a run's body (the graph's invocation, in ``run_recorded``): it puts the run's
labels (protocol, case, format / mode / role) in the LangChain config that the graph inherits
(``var_child_runnable_config``, which ``ensure_config`` reads), so the graph's run, its nodes' runs and
every model call's run carry them as metadata (LangSmith shows them). With OpenTelemetry on (``--otel``
or ``CONSILIUM_OTEL=1``) it also opens the run's span and adds a :class:`~consilium.observe.otel.SpanHandler`
to the callbacks, so nodes and calls become spans under it. A config the caller is already in (a
LangChain runnable or a LangGraph node that calls consilium) is extended, never replaced.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from consilium.redact import redact

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["ENV", "observe_run", "otel_enabled", "reset_otel", "run_metadata", "use_otel"]

#: The environment variable that turns OpenTelemetry spans on for every run of the process.
ENV = "CONSILIUM_OTEL"

_otel: ContextVar[bool] = ContextVar("consilium_otel", default=False)


def use_otel(enabled: bool) -> Token[bool]:
    """Turn spans on (``--otel``) for what runs in this context until :func:`reset_otel`; refuses in one
    line when the ``otel`` extra is missing."""
    if enabled:
        from consilium.observe.otel import require_otel

        require_otel()
    return _otel.set(enabled)


def reset_otel(token: Token[bool]) -> None:
    _otel.reset(token)


def otel_enabled() -> bool:
    return _otel.get() or os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


def run_metadata(protocol: str, labels: Mapping[str, Any]) -> dict[str, Any]:
    """The run's labels as metadata: plain values only (a case id, a format), never a model's settings."""
    return {"protocol": protocol, **{k: v for k, v in labels.items() if isinstance(v, str | int | float | bool)}}


async def observe_run(body: Callable[[], Awaitable[None]], protocol: str, **labels: Any) -> None:
    """Run ``body`` with the run's labels in the LangChain config (and, with OpenTelemetry on, in its span)."""
    metadata = run_metadata(protocol, labels)
    if not otel_enabled():
        await _with_config({"metadata": metadata}, body)
        return
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    from consilium.observe.otel import SpanHandler, record_error, tracer

    attributes = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": protocol,
                  **{f"consilium.{k}": v for k, v in metadata.items()}}
    span = tracer().start_span(f"invoke_workflow {protocol}", attributes=attributes)
    handler = SpanHandler(tracer(), root=span)
    error: BaseException | None = None
    try:
        # Other instrumentation (HTTP clients) nests under it. The error is recorded below, masked, not by
        # use_span (which would record the raw exception and its traceback).
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            await _with_config({"metadata": metadata, "callbacks": [handler]}, body)
    except BaseException as exc:  # a failed call, the wall clock (a cancellation), a budget
        error = exc
        raise
    finally:
        handler.close(error)
        if error is not None:
            why = "cancelled (wall-clock limit)" if isinstance(error, asyncio.CancelledError) else \
                redact(f"{type(error).__name__}: {error}")
            span.set_status(Status(StatusCode.ERROR, why))
            if not isinstance(error, asyncio.CancelledError):
                record_error(span, error)
        span.end()


async def _with_config(extra: RunnableConfig, body: Callable[[], Awaitable[None]]) -> None:
    from langchain_core.runnables.config import merge_configs, var_child_runnable_config  # on a run, not at start-up

    token = var_child_runnable_config.set(merge_configs(var_child_runnable_config.get(), extra))
    try:
        await body()
    finally:
        var_child_runnable_config.reset(token)
