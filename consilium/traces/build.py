"""The fields every trace shares, filled from a finished (or failed) run."""

from __future__ import annotations

from typing import Any

from consilium.cases import Case
from consilium.models import CallRecorder
from consilium.traces.io import package_versions
from consilium.traces.schema import UsageSummary

__all__ = ["base_fields"]


def base_fields(case: Case, *, run_id: str, model: str, config: dict[str, Any], recorder: CallRecorder,
                started_at: str, wall_s: float, error: str | None) -> dict[str, Any]:
    return {
        "run_id": run_id, "case_id": case.id, "case_hash": case.content_hash(), "case": case.model_dump(mode="json"),
        "model": model, "config": config, "status": "failed" if error else "completed", "error": error,
        "failed_stage": recorder.last_attempt.stage if error and recorder.last_attempt else None,
        "usage": UsageSummary.from_ledger(recorder.ledger), "calls": sorted(recorder.calls, key=lambda c: c.index),
        "started_at": started_at, "wall_s": round(wall_s, 3), "versions": package_versions(),
    }
