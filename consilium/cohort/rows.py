"""A cohort's rows: one line of arms.csv per (case, model, protocol, variant), and per replicate in a
cohort run in replicates (its ``replicate`` index and ``seed`` columns after ``format``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from consilium.cohort.arms import CohortArm, relative
from consilium.graphs.registry import get_protocol, protocol_of
from consilium.models.pricing import trace_cost
from consilium.redact import redact
from consilium.traces.schema import TraceBase

__all__ = ["ARM_COLUMNS", "REPLICATE_COLUMNS", "arm_row", "counts", "failed_row", "replicate_cells", "row_key",
           "variant_columns"]

#: The columns every arms.csv has, even with no arm finished (a cohort stopped at once).
ARM_COLUMNS = ("case_id", "model_spec", "model", "protocol", "format", "status", "stop_reason", "input_tokens",
               "output_tokens", "calls", "cached_tokens", "cache_hits", "spent_input_tokens", "spent_output_tokens",
               "spent_cached_tokens", "spent_calls", "cost_usd", "spent_cost_usd", "cost_estimated", "wall_s",
               "failed_stage", "error",
               "trace", "resumed")
#: The columns a cohort run in replicates adds, after ``format``: the replicate's index and its seed.
REPLICATE_COLUMNS = ("replicate", "seed")


def replicate_cells(arm: CohortArm) -> dict[str, Any]:
    """An arm's replicate columns: none when its cohort is not run in replicates."""
    return {} if arm.replicate is None else {"replicate": arm.replicate, "seed": arm.seed}


def row_key(row: dict[str, Any]) -> tuple[str, str, str, int]:
    """What names a row (arms.csv's order): case id, model spec, format, replicate (-1 when none)."""
    replicate = row.get("replicate")
    return (str(row["case_id"]), str(row["model_spec"]), str(row["format"]),
            -1 if replicate in (None, "") else int(replicate))


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, 8)


def _common(trace: TraceBase, path: Path, run_dir: Path) -> dict[str, Any]:
    # As generated (a response-cache hit counts the call that produced it), then what this run spent.
    total = trace.usage.total
    spent = trace.usage.spent if trace.usage.spent is not None else total
    return {
        "input_tokens": total.input_tokens, "output_tokens": total.output_tokens, "calls": total.calls,
        "cached_tokens": total.cached_tokens, "cache_hits": trace.usage.cache_hits or 0,
        "spent_input_tokens": spent.input_tokens, "spent_output_tokens": spent.output_tokens,
        "spent_cached_tokens": spent.cached_tokens, "spent_calls": spent.calls,
        # dollars at the prices each call recorded (models/pricing.py); None (an empty cell): unknown
        "cost_usd": _usd(trace_cost(trace)), "spent_cost_usd": _usd(trace_cost(trace, spent=True)),
        # true when any call's tokens were counted with tiktoken: its dollars are an estimate too
        "cost_estimated": total.estimated,
        "wall_s": trace.wall_s,
        "failed_stage": trace.failed_stage or "", "error": trace.error or "", "trace": relative(path, run_dir),
    }


def arm_row(trace: TraceBase, model_spec: str, path: Path, run_dir: Path,
            arm: CohortArm | None = None) -> dict[str, Any]:
    """A trace's row of arms.csv: what every protocol's row has, the protocol's own columns between (and
    ``arm``'s replicate columns, when its cohort runs in replicates)."""
    protocol = protocol_of(trace)
    return {
        "case_id": trace.case_id, "model_spec": model_spec, "model": trace.model, "protocol": protocol.name,
        "format": protocol.arm_variant(protocol.variant(trace)), **(replicate_cells(arm) if arm else {}),
        "status": trace.status,
        **protocol.row(trace), **_common(trace, path, run_dir),
    }


def failed_row(arm: CohortArm, name: str, exc: BaseException) -> dict[str, Any]:
    """The row of an arm's variant (``name`` as arms.csv names it) whose run raised instead of recording."""
    return {"case_id": arm.case.id, "model_spec": arm.model_spec, "protocol": arm.protocol, "format": name,
            **replicate_cells(arm), "status": "failed", "error": redact(f"{type(exc).__name__}: {exc}"), "trace": ""}


def variant_columns(protocols: Iterable[str]) -> tuple[str, ...]:
    """The columns the protocols' rows add to :data:`ARM_COLUMNS`, each once, in the protocols' order."""
    columns = [column for name in protocols for column in get_protocol(name).row_columns]
    return tuple(dict.fromkeys(columns))


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """A manifest's counts: arms, completed, failed (any other status) and resumed."""
    completed = sum(r["status"] == "completed" for r in rows)
    return {"arms": len(rows), "completed": completed, "failed": len(rows) - completed,
            "resumed": sum(r.get("resumed") is True for r in rows)}
