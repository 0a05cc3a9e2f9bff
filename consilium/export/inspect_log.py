"""``export --to inspect``: one Inspect AI eval log per protocol × model × variant of a run folder.

Each log is a task run on one model (``eval.task``: ``<protocol>_<format>``), its samples the cases, its
results one score per rubric × component × criterion with the mean over the evaluable items and the
count of those not evaluable. ``inspect view`` opens the files and ``inspect_ai.log.read_eval_log``
reads them back (docs/export.md).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from consilium.cohort.arms import model_folder
from consilium.export.files import check_targets, export_folder, new_file, require
from consilium.export.rows import moderator_of
from consilium.export.source import Arm, OpenedRun
from consilium.redact import redact_value
from consilium.traces.schema import TraceBase

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

__all__ = ["InspectFormat", "export_inspect", "groups", "log_name", "masked"]

InspectFormat = Literal["eval", "json"]
GroupKey = tuple[str, str, str]  # protocol, model spec (else id), format


def groups(run: OpenedRun) -> dict[GroupKey, list[Arm]]:
    """The run's arms by (protocol, model spec, format), each group's arms by case (then replicate)."""
    found: dict[GroupKey, list[Arm]] = defaultdict(list)
    for arm in run.arms:
        found[(arm.protocol, arm.model_key, arm.format)].append(arm)
    return {key: sorted(arms, key=lambda a: (a.case_id, a.replicate or 0)) for key, arms in found.items()}


def log_name(run: OpenedRun, key: GroupKey, fmt: InspectFormat) -> str:
    protocol, spec, variant = key
    return f"{run.run_id}_{protocol}_{variant}_{model_folder(spec)}.{fmt}"


def _epochs(arms: list[Arm]) -> list[int]:
    """Each arm's epoch: 1, or the rank of its replicate among its case's replicates."""
    replicates: dict[str, list[int]] = defaultdict(list)
    for arm in arms:
        replicates[arm.case_id].append(arm.replicate or 0)
    return [sorted(set(replicates[a.case_id])).index(a.replicate or 0) + 1 for a in arms]


def _results(samples: list[EvalSample], completed: int) -> Any:
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    values: dict[str, list[float]] = {}
    missing: dict[str, int] = {}
    outside: dict[str, int] = {}
    where: dict[str, dict[str, Any]] = {}
    for sample in samples:
        for name, score in (sample.scores or {}).items():
            values.setdefault(name, [])
            missing.setdefault(name, 0)
            meta = score.metadata or {}
            where.setdefault(name, {k: meta.get(k) for k in ("rubric", "component", "criterion", "judge_model")})
            if meta.get("out_of_scope"):  # no score: never in the mean
                outside[name] = outside.get(name, 0) + 1
            elif meta.get("not_evaluable"):
                missing[name] += 1
            else:
                values[name].append(float(score.as_float()))
    scores = []
    for name, scored in values.items():
        metrics = {"not_evaluable": EvalMetric(name="not_evaluable", value=missing[name])}
        if name in outside:
            metrics["out_of_scope"] = EvalMetric(name="out_of_scope", value=outside[name])
        if scored:  # a mean over nothing is left out, never 0
            metrics = {"mean": EvalMetric(name="mean", value=sum(scored) / len(scored)), **metrics}
        scores.append(EvalScore(name=name, scorer=str(where[name]["rubric"]), scored_samples=len(scored),
                                unscored_samples=missing[name] + outside.get(name, 0), metrics=metrics,
                                metadata=where[name]))
    return EvalResults(total_samples=len(samples), completed_samples=completed, scores=scores)


def _time(value: str | None, fallback: str) -> str:
    try:
        return datetime.fromisoformat(value).isoformat() if value else fallback
    except ValueError:
        return fallback


def _log(run: OpenedRun, key: GroupKey, arms: list[Arm]) -> EvalLog:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalPlan,
        EvalPlanStep,
        EvalRevision,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelConfig, ModelUsage

    from consilium.export.inspect_samples import inspect_model, sample_of

    protocol, _, variant = key
    samples: list[EvalSample] = []
    first_trace: TraceBase | None = None
    judges: set[str] = set()
    for arm, epoch in zip(arms, _epochs(arms), strict=True):
        loaded = run.load(arm)
        first_trace = first_trace or loaded.trace
        judges |= {j.judge_model for _, j in loaded.judgements}
        samples.append(sample_of(run, loaded, epoch))
    model_id = first_trace.model if first_trace is not None else arms[0].model
    now = datetime.now(UTC).isoformat()
    created = _time(run.created_at, first_trace.started_at if first_trace is not None else now)
    roles: dict[str, Any] = {}
    moderator = moderator_of(first_trace) if first_trace is not None else None
    if moderator:  # its own spec (--moderator-model), else the panel's, which it then is
        own = run.moderator_spec or arms[0].model_spec
        roles["moderator"] = ModelConfig(model=inspect_model(own, moderator), args={"model_spec": own} if own else {})
    for judge in sorted(judges):  # the judge model as its records name it (usually one for every rubric)
        spec = {"model_spec": run.judge_model} if run.judge_model and len(judges) == 1 else {}
        roles["judge" if len(judges) == 1 else f"judge:{judge}"] = ModelConfig(model=judge, args=spec)
    digest = hashlib.sha256("\x1f".join((run.run_id, *key)).encode("utf-8")).hexdigest()
    usage: dict[str, ModelUsage] = {}
    for sample in samples:
        for name, one in sample.model_usage.items():
            usage[name] = usage.get(name, ModelUsage()) + one
    spec_model = EvalSpec(
        eval_id=digest[:22], run_id=run.run_id, created=created, task=f"{protocol}_{variant}",
        task_id=digest[22:44], task_display_name=f"{protocol} · {variant}",
        task_args={"protocol": protocol, "format": variant},
        dataset=EvalDataset(name=run.dataset, location=run.dataset_location, samples=len(samples),
                            sample_ids=sorted({a.case_id for a in arms})),
        model=inspect_model(arms[0].model_spec, model_id), model_args={"model_spec": arms[0].model_spec},
        model_roles=roles or None,
        config=EvalConfig(epochs=max(s.epoch for s in samples)),
        revision=EvalRevision(type="git", origin="", commit=run.git_revision) if run.git_revision else None,
        packages=dict(run.versions),
        metadata={"consilium": {"run_folder": str(run.path), "kind": run.kind, "status": run.status,
                                "command": run.command}},
    )
    params = first_trace.config.model_dump(mode="json") if first_trace is not None else {}
    completed = sum(1 for s in samples if s.error is None)
    status: Literal["success", "error", "started"] = \
        "success" if run.status == "completed" else "error" if run.status == "aborted" else "started"
    return EvalLog(
        status=status, eval=spec_model, plan=EvalPlan(steps=[EvalPlanStep(solver=protocol, params=params)]),
        results=_results(samples, completed),
        stats=EvalStats(started_at=created, completed_at=_time(run.updated_at, created), model_usage=usage),
        error=EvalError(message=run.error or "aborted", traceback="", traceback_ansi="")
        if status == "error" else None,
        samples=samples,
    )


def export_inspect(run: OpenedRun, out: Path, fmt: InspectFormat = "eval", *, force: bool = False) -> list[Path]:
    """Write one log per (protocol, model, format) of the run under ``out``; returns the files written."""
    require("inspect_ai", "export --to inspect")
    from inspect_ai.log import write_eval_log

    by_group = groups(run)
    targets = {key: out / log_name(run, key, fmt) for key in by_group}
    check_targets(list(targets.values()), force=force, run_dir=run.path)
    # Every log is written to its temporary file first; only when all are written are they moved into
    # place (as the stack unwinds), so a failure (a trace that does not read) leaves no part of the export.
    with export_folder(out), ExitStack() as stack:
        for key, arms in by_group.items():
            tmp = stack.enter_context(new_file(targets[key], force=force))
            write_eval_log(masked(_log(run, key, arms)), str(tmp), format=fmt)
    return list(targets.values())


def masked(log: EvalLog) -> EvalLog:
    """The log with every string in it masked (keys, URL credentials), as every file consilium writes
    is: Inspect writes its files itself, past consilium.fileio."""
    from inspect_ai.log import EvalLog

    return EvalLog.model_validate(redact_value(log.model_dump(mode="json")))
