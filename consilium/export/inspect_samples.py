"""One arm as an Inspect AI sample: the case as input, the reference as target, the final answer as the
output, one score per judged criterion, and the model usage of its calls (docs/export.md).

Only called once ``inspect_ai`` has been found (consilium/export/inspect_log.py checks for it).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta
from typing import Any

from inspect_ai.log import EvalError, EvalSample
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser, ModelOutput, ModelUsage
from inspect_ai.scorer import Score

from consilium.export.rows import (
    answer_of,
    case_text,
    moderator_of,
    reference_of,
    rubric_of,
    scale_of,
    whole_case,
)
from consilium.export.source import LoadedArm, OpenedRun
from consilium.graphs.registry import protocol_of
from consilium.judges.record import Judgement, JudgementItem
from consilium.models import CallRecord
from consilium.runfolder.records import out_of_scope
from consilium.traces.schema import TraceBase

__all__ = ["inspect_model", "model_usage", "protocol_row", "sample_of", "score_name", "usage_of"]


def inspect_model(model_spec: str | None, model: str) -> str:
    """A model as Inspect names one, ``provider/model``: the spec's backend, then the model's id (the id
    alone when no spec was recorded)."""
    if model_spec is None or ":" not in model_spec:
        return model
    return f"{model_spec.split(':', 1)[0]}/{model}"


def usage_of(calls: list[CallRecord]) -> ModelUsage:
    """Inspect's usage of some calls. Inspect's ``input_tokens`` leaves out the prompt tokens read from a
    cache (``input_tokens_cache_read``); ours count them in, so they are taken out here."""
    inp = sum(c.usage.input_tokens for c in calls)
    out = sum(c.usage.output_tokens for c in calls)
    cached = sum(c.usage.cached_tokens for c in calls)
    return ModelUsage(input_tokens=inp - cached, output_tokens=out, total_tokens=inp + out,
                      input_tokens_cache_read=cached, reasoning_tokens=sum(c.usage.reasoning_tokens for c in calls))


def model_usage(calls: list[CallRecord]) -> dict[str, ModelUsage]:
    """Usage per model name (as each response named it)."""
    by_model: dict[str, list[CallRecord]] = {}
    for call in calls:
        by_model.setdefault(call.model, []).append(call)
    return {name: usage_of(group) for name, group in by_model.items()}


def score_name(judgement: Judgement, item: JudgementItem) -> str:
    return f"{judgement.rubric}/{item.component}/{item.criterion}"


def _score(judgement: Judgement, item: JudgementItem) -> Score:
    rubric = rubric_of(judgement.rubric)
    outside = out_of_scope(item)
    metadata: dict[str, Any] = {
        "rubric": judgement.rubric, "rubric_version": judgement.rubric_version, "component": item.component,
        "criterion": item.criterion, "judge_model": judgement.judge_model, "not_evaluable": item.not_evaluable,
        "out_of_scope": outside, "reason": item.reason, "calibrated_score": item.calibrated_score,
        "flags": dict(item.flags), "whole_case": whole_case(judgement, item),
        "scale": scale_of(rubric) if rubric is not None else None,
    }
    if outside:  # the four-decision rubric's −1: the reference does not decide it, so there is no score
        return Score.unscored(reason="out of scope", explanation=item.rationale, metadata=metadata)
    if item.not_evaluable or item.score is None:
        # Inspect's own "no value" (NaN), which its metrics skip: never a 0.
        return Score.unscored(reason=item.reason or "not evaluable", explanation=item.rationale,
                              metadata={**metadata, "not_evaluable": True})
    return Score(value=item.score, explanation=item.rationale, metadata=metadata)


def _end(started: str, seconds: float) -> str | None:
    try:
        return (datetime.fromisoformat(started) + timedelta(seconds=seconds)).isoformat()
    except ValueError:
        return None


def _uuid(*parts: object) -> str:
    return str(uuid.UUID(hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()[:32]))


def sample_of(run: OpenedRun, loaded: LoadedArm, epoch: int) -> EvalSample:
    """The arm as a sample; a failed arm carries its error (``sample.error``) and no scores."""
    arm, trace = loaded.arm, loaded.trace
    case = trace.case if trace is not None else run.case_of(arm.case_id)
    text = case_text(case) or f"case {arm.case_id} (no trace of it was recorded)"
    answer = answer_of(trace) if trace is not None else None
    name = inspect_model(arm.model_spec, trace.model if trace is not None else arm.model)
    failed = (trace.status if trace is not None else arm.status) != "completed"
    error = (trace.error if trace is not None else arm.error) or (arm.error if failed else None)
    output = (ModelOutput.from_content(model=name, content=answer) if answer is not None
              else ModelOutput(model=name, error=error if failed else None))
    messages: list[ChatMessage] = [ChatMessageUser(content=text)]
    if answer is not None:
        messages.append(ChatMessageAssistant(content=answer, model=name))
    run_calls = list(trace.calls) if trace is not None else []
    judge_calls = [c for _, j in loaded.judgements for c in j.calls]
    usage = model_usage(run_calls + judge_calls)
    roles = {"panel": [c for c in run_calls if c.role != "moderator"],
             "moderator": [c for c in run_calls if c.role == "moderator"], "judge": judge_calls}
    scores = None
    if not failed:
        scores = {score_name(j, item): _score(j, item) for _, j in loaded.judgements for item in j.items}
    row = protocol_row(trace)
    metadata: dict[str, Any] = {
        "run_id": run.run_id, "protocol": arm.protocol, "format": arm.format, "model_spec": arm.model_spec,
        "model": trace.model if trace is not None else arm.model,
        "moderator_model": moderator_of(trace) if trace is not None else None,
        "status": trace.status if trace is not None else arm.status, "stop_reason": row.get("stop_reason") or None,
        "rounds": row.get("rounds"), "turns": row.get("turns"), "calls": len(run_calls),
        "failed_calls": sum(c.error is not None for c in run_calls),
        "failed_stage": trace.failed_stage if trace is not None else arm.failed_stage,
        "seed": trace.config.get("seed") if trace is not None else None, "replicate": arm.replicate,
        "trace": run.relative(arm.trace) if arm.trace is not None else None,
    }
    return EvalSample(
        id=arm.case_id, epoch=epoch, input=text, target=reference_of(case) or "", messages=messages, output=output,
        scores=scores, metadata=metadata, model_usage=usage,
        role_usage={role: usage_of(calls) for role, calls in roles.items() if calls},
        started_at=trace.started_at if trace is not None else None,
        completed_at=_end(trace.started_at, trace.wall_s) if trace is not None else None,
        total_time=trace.wall_s if trace is not None else None,
        working_time=trace.wall_s if trace is not None else None,
        uuid=_uuid(run.run_id, arm.protocol, arm.model_spec, arm.format, arm.case_id, arm.replicate),
        error=EvalError(message=error or "failed", traceback="", traceback_ansi="") if failed else None,
    )


def protocol_row(trace: TraceBase | None) -> dict[str, Any]:
    """The protocol's own arms.csv columns of a trace (stop reason, rounds or turns); none without one."""
    if trace is None:
        return {}
    own = protocol_of(trace).row(trace)
    return {k: (v if v != "" else None) for k, v in own.items()}
