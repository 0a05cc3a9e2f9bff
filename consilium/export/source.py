"""A run folder as the exporters read it: its arms, and for each its trace and judgement records.

Two kinds of folder: a cohort's (``arms.csv`` lists every arm, a failed one included, and its
``manifest.json`` the settings) and a ``simulate`` / ``board`` / ``turn`` run's (``manifest.json`` lists
its traces). Traces are read with the registry's reader and judgements with the judgement reader, one arm
at a time, so a large cohort never sits in memory whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consilium.errors import UserError
from consilium.graphs.registry import protocol_of, read_trace
from consilium.judges.record import Judgement
from consilium.runfolder.folder import RunFolder
from consilium.traces.schema import TraceBase

__all__ = ["Arm", "LoadedArm", "OpenedRun", "open_run"]


@dataclass(frozen=True)
class Arm:
    """One arm as its folder lists it; ``trace`` is None for an arm that failed before writing one."""

    case_id: str
    model_spec: str | None  # None: a run whose traces did not record it (a simulate run's)
    model: str
    protocol: str
    format: str
    status: str
    trace: Path | None
    error: str | None = None
    failed_stage: str | None = None
    replicate: int | None = None

    @property
    def model_key(self) -> str:
        """The model an arm's files and logs are grouped by: its spec, else its id."""
        return self.model_spec or self.model


@dataclass(frozen=True)
class LoadedArm:
    arm: Arm
    trace: TraceBase | None
    judgements: tuple[tuple[Path, Judgement], ...]


@dataclass
class OpenedRun:
    """A run folder as the exporters read it (:func:`open_run`): its settings and its arms."""

    folder: RunFolder
    path: Path
    kind: str  # "cohort" or "run"
    run_id: str
    created_at: str
    updated_at: str | None
    status: str  # "completed", "aborted", "running"
    error: str | None
    dataset: str
    dataset_location: str | None
    judge_model: str | None
    git_revision: str | None
    versions: dict[str, str]
    command: list[str]
    arms: list[Arm] = field(default_factory=list)
    moderator_spec: str | None = None  # every arm's moderator (a cohort's --moderator-model); None: the panel's

    def relative(self, path: Path) -> str:
        return self.folder.relative(path)

    def load(self, arm: Arm) -> LoadedArm:
        """The arm's trace and the judgement records beside it (``<case>.<variant>.judge.<rubric>.json``)."""
        if arm.trace is None:
            return LoadedArm(arm, None, ())
        return LoadedArm(arm, read_trace(arm.trace), tuple(self.folder.judgements_of(arm.trace)))

    def loaded(self, arms: list[Arm] | None = None) -> Iterator[LoadedArm]:
        for arm in self.arms if arms is None else arms:
            yield self.load(arm)

    def case_of(self, case_id: str) -> dict[str, Any] | None:
        """A case as some trace of it embeds it (for an arm that left no trace of its own)."""
        for arm in self.arms:
            if arm.case_id == case_id and arm.trace is not None:
                return read_trace(arm.trace).case
        return None


def _cohort_arms(folder: RunFolder) -> list[Arm]:
    # An arm that failed before its trace was made has only its spec: it takes the id its spec's other
    # arms recorded (else the spec itself), as the reports name it (RunFolder.arms).
    rows = folder.arms()
    if not rows:
        raise UserError(f"{folder.arms_csv}: no arms")
    return [Arm(case_id=row.case_id, model_spec=row.model_spec or None, model=row.model, protocol=row.protocol,
                format=row.format, status=row.status,
                trace=folder.trace_location(row.trace) if row.trace else None,
                error=row.error or None, failed_stage=row.failed_stage or None, replicate=row.replicate)
            for row in rows]


def _trace_arm(path: Path) -> Arm:
    trace = read_trace(path)
    protocol = protocol_of(trace)
    return Arm(case_id=trace.case_id, model_spec=trace.model_spec, model=trace.model,
               protocol=protocol.name, format=protocol.arm_variant(protocol.variant(trace)), status=trace.status,
               trace=path, error=trace.error, failed_stage=trace.failed_stage)


def _open_cohort(folder: RunFolder) -> OpenedRun:
    run_dir = folder.path
    arms = _cohort_arms(folder)
    if not folder.has_manifest:  # a cohort older than 0.2 wrote it only at the end
        first = next((read_trace(a.trace) for a in arms if a.trace is not None), None)
        return OpenedRun(folder=folder, path=run_dir, kind="cohort", run_id=run_dir.name,
                         created_at=first.started_at if first else "", updated_at=None, status="completed",
                         error=None, dataset=run_dir.name, dataset_location=None, judge_model=None,
                         git_revision=None, versions=first.versions if first else {}, command=[], arms=arms)
    manifest = folder.manifest()
    cases = manifest.settings.cases
    return OpenedRun(folder=folder, path=run_dir, kind="cohort", run_id=manifest.run_id, created_at=manifest.created_at,
                     updated_at=manifest.updated_at, status=manifest.status, error=manifest.error,
                     dataset=Path(cases).name or cases, dataset_location=cases,
                     judge_model=manifest.settings.judge_model, git_revision=manifest.git_revision,
                     versions=manifest.versions, command=manifest.command, arms=arms,
                     moderator_spec=manifest.settings.moderator_model)


def _open_traces(folder: RunFolder) -> OpenedRun:
    run_dir, manifest = folder.path, folder.manifest_path
    data = folder.manifest_data()
    names = data.get("traces")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names:
        raise UserError(f"{manifest}: traces: no trace listed (not a run folder)")
    arms = [_trace_arm(run_dir / name) for name in names]
    cases = sorted({a.case_id for a in arms})
    return OpenedRun(folder=folder, path=run_dir, kind="run", run_id=str(data.get("run_id") or run_dir.name),
                     created_at=str(data.get("created_at") or ""), updated_at=None, status="completed", error=None,
                     dataset=", ".join(cases), dataset_location=None, judge_model=None,
                     git_revision=data.get("git_revision") if isinstance(data.get("git_revision"), str) else None,
                     versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
                     command=[str(c) for c in data.get("command") or []], arms=arms)


def open_run(run_dir: Path) -> OpenedRun:
    """A cohort folder (``arms.csv``) or a run folder (``manifest.json`` listing traces); anything else
    is one line naming the path."""
    folder = RunFolder.open(run_dir)
    if folder.is_cohort:
        return _open_cohort(folder)
    if folder.has_manifest:
        return _open_traces(folder)
    raise UserError(f"{run_dir}: not a run folder (no arms.csv and no manifest.json)")
