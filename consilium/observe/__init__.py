"""Observability: a run's labels for LangChain's callbacks (LangSmith) and OpenTelemetry spans.

The model calls themselves are reported by ``consilium/models/wrappers/observed.py``; this package adds
what a run knows (its protocol, case and variant) and, optionally, OpenTelemetry (docs/observability.md).
"""

from consilium.observe.scope import ENV, observe_run, otel_enabled, reset_otel, run_metadata, use_otel

__all__ = ["ENV", "observe_run", "otel_enabled", "reset_otel", "run_metadata", "use_otel"]
