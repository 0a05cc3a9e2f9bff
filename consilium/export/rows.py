"""The rows of the flat tables (consilium/export/columns.py), and what the Inspect log shares with them:
an arm's answer, its reference, its protocol's row, and each judge item as a plain record."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from consilium.cases import Case
from consilium.errors import UserError
from consilium.export.source import LoadedArm, OpenedRun
from consilium.graphs.registry import protocol_of
from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import Rubric, load_rubric, rubric_names
from consilium.judges.scope import scale_points
from consilium.models import CallRecord
from consilium.runfolder.records import out_of_scope
from consilium.traces.schema import TraceBase

__all__ = ["answer_of", "arm_row", "call_rows", "case_text", "judgement_rows", "moderator_of",
           "reference_of", "rubric_of", "scale_of", "whole_case"]


def answer_of(trace: TraceBase) -> str | None:
    """The text judged as the run's conclusion (a Specialist Turn's answer), as the protocol says."""
    texts = protocol_of(trace).components(trace)
    return texts.get("conclusion") or texts.get("answer") or None


def _case(data: dict[str, Any] | None) -> Case | None:
    if data is None:
        return None
    try:
        return Case.model_validate(data)
    except ValueError as exc:
        raise UserError(f"case {data.get('id')!r}: the case embedded in its trace is not valid ({exc})") from None


def case_text(data: dict[str, Any] | None) -> str | None:
    """The case as every prompt shows it (never its reference)."""
    case = _case(data)
    return case.render() if case is not None else None


def reference_of(data: dict[str, Any] | None) -> str | None:
    """The case's reference conclusion, else its reference diagnosis."""
    case = _case(data)
    reference = case.reference if case is not None else None
    if reference is None:
        return None
    return reference.conclusion or reference.diagnosis or None


def moderator_of(trace: TraceBase) -> str | None:
    """The moderator's model id, for the protocols that have a moderator (on the trace or in its config)."""
    moderator = getattr(trace, "moderator_model", None) or trace.config.get("moderator_model")
    return str(moderator) if moderator else None


@cache
def rubric_of(name: str) -> Rubric | None:
    """A shipped rubric by name (None for one loaded from a file elsewhere)."""
    return load_rubric(name) if name in rubric_names() else None


def scale_of(rubric: Rubric | None) -> list[int]:
    """The rubric's scores, without the four-decision rubric's −1 (out of scope, no score); none for a
    rubric that is not shipped."""
    if rubric is None:
        return []
    return scale_points(rubric)


def whole_case(judgement: Judgement, item: JudgementItem) -> bool:
    """Whether the item is a whole-case criterion: the shipped rubric says, else the item's own detail."""
    rubric = rubric_of(judgement.rubric)
    known = next((c for c in rubric.criteria if c.id == item.criterion), None) if rubric is not None else None
    return known.whole_case if known is not None else bool(item.detail.get("whole_case"))


def _key(run: OpenedRun, loaded: LoadedArm) -> dict[str, Any]:
    arm = loaded.arm
    return {"run_id": run.run_id, "case_id": arm.case_id, "protocol": arm.protocol, "model_spec": arm.model_spec,
            "format": arm.format, "replicate": arm.replicate}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def arm_row(run: OpenedRun, loaded: LoadedArm) -> dict[str, Any]:
    """The arm's row of ``arms``: from its trace, or from its folder's listing when it left none."""
    arm, trace = loaded.arm, loaded.trace
    row: dict[str, Any] = {**_key(run, loaded), "model": arm.model, "status": arm.status,
                           "failed_stage": arm.failed_stage, "error": arm.error}
    if trace is None:
        return row
    protocol = protocol_of(trace)
    own = protocol.row(trace)
    total = trace.usage.total
    spent = trace.usage.spent if trace.usage.spent is not None else total
    row.update({
        "model": trace.model, "moderator_model": moderator_of(trace), "variant": protocol.variant(trace),
        "seed": trace.config.get("seed"), "status": trace.status, "stop_reason": own.get("stop_reason") or None,
        "rounds": _int_or_none(own.get("rounds")), "turns": _int_or_none(own.get("turns")),
        "calls": len(trace.calls), "failed_calls": sum(c.error is not None for c in trace.calls),
        "cache_hits": sum(c.cached for c in trace.calls),
        "input_tokens": total.input_tokens, "output_tokens": total.output_tokens,
        "cached_tokens": total.cached_tokens, "reasoning_tokens": total.reasoning_tokens,
        "spent_input_tokens": spent.input_tokens, "spent_output_tokens": spent.output_tokens,
        "estimated": total.estimated, "wall_s": trace.wall_s, "started_at": trace.started_at,
        "failed_stage": trace.failed_stage, "error": trace.error, "answer": answer_of(trace),
        "reference": reference_of(trace.case), "trace": run.relative(arm.trace) if arm.trace else None,
    })
    return row


def _call_row(key: dict[str, Any], call: CallRecord, source: str, rubric: str | None) -> dict[str, Any]:
    usage = call.usage
    return {**key, "source": source, "rubric": rubric, "index": call.index, "stage": call.stage, "role": call.role,
            "round": call.round, "model": call.model, "schema_name": call.schema_name,
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens, "reasoning_tokens": usage.reasoning_tokens,
            "estimated": usage.estimated, "latency_ms": call.latency_ms, "cached": call.cached,
            "finish_reason": call.finish_reason, "status": "ok" if call.error is None else "error",
            "error": call.error, "started_at": call.started_at, "request_hash": call.request_hash}


def call_rows(run: OpenedRun, loaded: LoadedArm) -> list[dict[str, Any]]:
    """Every recorded call of the arm's run, then every call of its judgements."""
    key = _key(run, loaded)
    rows = [_call_row(key, c, "run", None) for c in (loaded.trace.calls if loaded.trace else [])]
    for _, judgement in loaded.judgements:
        rows += [_call_row(key, c, "judge", judgement.rubric) for c in judgement.calls]
    return rows


def judgement_rows(run: OpenedRun, loaded: LoadedArm) -> list[dict[str, Any]]:
    """One row per judge item of every judgement record of the arm (arm × rubric × criterion × judge)."""
    key = {**_key(run, loaded), "model": loaded.trace.model if loaded.trace else loaded.arm.model}
    rows = []
    for file, judgement in loaded.judgements:
        scale = scale_of(rubric_of(judgement.rubric))
        low, high = (float(min(scale)), float(max(scale))) if scale else (None, None)
        for item in judgement.items:
            outside = out_of_scope(item)
            rows.append({**key, "rubric": judgement.rubric, "rubric_version": judgement.rubric_version,
                         "judge_model": judgement.judge_model, "component": item.component,
                         "criterion": item.criterion, "score": None if outside else item.score,
                         "calibrated_score": None if outside else item.calibrated_score,
                         "scale_min": low, "scale_max": high, "in_scope": not outside,
                         "evaluable": not item.not_evaluable,
                         "not_evaluable_reason": item.reason if item.not_evaluable else None,
                         "rationale_chars": len(item.rationale or ""),
                         "flags": json.dumps(item.flags, sort_keys=True), "whole_case": whole_case(judgement, item),
                         "judgement": run.relative(Path(file))})
    return rows
