"""Run every (case, model, format) arm of a cohort.

One role assignment per (case, model) is shared by both formats (ai-consilium.txt, Fig. 2a). At
most ``concurrency`` model calls are in flight across all arms (the shared model stack's limit), a
failing arm is recorded with its stage and error and the cohort goes on, and each arm's trace is
written as soon as it finishes, so memory stays flat and an interrupted cohort resumes by skipping
arms whose trace is complete (re-used calls come from the response cache). Traces go into
``arms/<model folder>/<2 hex of sha256(case id)>/``, 256 folders per model, so no folder holds
hundreds of thousands of files; cohorts made before (manifest 1.1) keep their flat folders.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from consilium.cases import Case, case_files, load_case
from consilium.cases.agentclinic import read_agentclinic
from consilium.cohort.index import ArmIndex, file_sha256, settings_digest
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.log import get_logger
from consilium.protocols.base import RunConfig, RunModels
from consilium.protocols.registry import AnyProtocol, get_protocol, protocol_of, read_trace
from consilium.redact import redact
from consilium.traces.io import write_trace
from consilium.traces.schema import TraceBase

log = get_logger(__name__)

__all__ = [
    "ARM_COLUMNS",
    "LAYOUTS",
    "CohortArm",
    "CohortRun",
    "Layout",
    "append_jsonl",
    "arm_path",
    "arm_row",
    "check_arm_paths",
    "json_config",
    "load_cohort",
    "load_cohort_files",
    "model_folder",
    "relative",
    "run_cohort",
    "same_setting",
    "write_csv",
]


def load_cohort(source: Path) -> list[Case]:
    """Cases from a folder of case files or an AgentClinic-style JSONL file; ids must be unique."""
    return [case for case, _ in load_cohort_files(source)]


def load_cohort_files(source: Path) -> list[tuple[Case, Path | None]]:
    """:func:`load_cohort`, each case with the file it came from (None for a JSONL line), against whose
    folder its slide images resolve."""
    found: list[tuple[Case, Path | None]]
    if source.is_dir():
        found = [(load_case(p), p) for p in case_files(source)]
    elif source.suffix == ".jsonl":
        found = [(case, None) for case in read_agentclinic(source)]
    elif source.is_file():
        found = [(load_case(source), source)]
    else:
        raise UserError(f"{source}: --cases must be a folder of case files or a .jsonl file")
    cases = [case for case, _ in found]
    if not cases:
        raise UserError(f"{source}: no cases found")
    ids = [c.id for c in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UserError(f"{source}: duplicate case ids: {', '.join(repeated[:5])}")
    return found


@dataclass(frozen=True)
class CohortArm:
    """One case with one model in one protocol, in each of its variants (consilium formats, board modes, …)."""

    case: Case
    model_spec: str
    formats: tuple[str, ...]
    protocol: str = "consilium"
    images: tuple[str, ...] = ()  # the case's slide images, resolved against its file's folder


def _slug(spec: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in spec).strip("._")[:40] or "model"


def model_folder(model_spec: str) -> str:
    """The folder of a model's arms: a readable slug plus 10 hex digits of the whole spec's sha256, so
    specs that slug alike (``scripted:a/b.yaml`` and ``scripted:a_b.yaml``; long paths cut short)
    never share a folder."""
    return f"{_slug(model_spec)}-{hashlib.sha256(model_spec.encode('utf-8')).hexdigest()[:10]}"


#: Where a cohort's traces go: ``sharded`` (manifest 1.2 on) or ``flat`` (older cohorts, resumed as they were).
Layout = Literal["sharded", "flat"]
LAYOUTS: tuple[Layout, ...] = ("sharded", "flat")


def arm_path(run_dir: Path, case_id: str, model_spec: str, fmt: str, layout: Layout = "sharded") -> Path:
    """``arms/<model folder>/<shard>/<case>.<variant>.trace.json``; the shard is the first two hex digits
    of the case id's SHA-256, so a case's variants share a folder. ``flat`` leaves the shard out."""
    folder = run_dir / "arms" / model_folder(model_spec)
    if layout == "sharded":
        folder = folder / hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:2]
    return folder / f"{case_id}.{fmt}.trace.json"


def check_arm_paths(arms: list[CohortArm], layout: Layout = "sharded") -> None:
    """Refuse a cohort in which two arms would write the same trace file."""
    seen: dict[Path, tuple[str, str]] = {}
    for arm in arms:
        for fmt in arm.formats:
            path = arm_path(Path("."), arm.case.id, arm.model_spec, fmt, layout)
            key = Path(str(path).casefold())  # one file on a case-insensitive disk
            if key in seen and seen[key] != (arm.model_spec, arm.case.id):
                other_spec, other_case = seen[key]
                raise UserError(f"arms {other_spec} / {other_case} and {arm.model_spec} / {arm.case.id} would "
                                f"write the same trace file {path}")
            seen[key] = (arm.model_spec, arm.case.id)


def relative(path: Path, run_dir: Path) -> str:
    """A path as stored in arms.csv and judgements.csv: relative to the run folder, so a copied or
    moved folder still reads."""
    try:
        return path.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        return str(path)


def _common(trace: TraceBase, model_spec: str, path: Path, run_dir: Path) -> dict[str, Any]:
    # As generated (a response-cache hit counts the call that produced it), then what this run spent.
    total = trace.usage.total
    spent = trace.usage.spent if trace.usage.spent is not None else total
    return {
        "input_tokens": total.input_tokens, "output_tokens": total.output_tokens, "calls": total.calls,
        "cached_tokens": total.cached_tokens, "cache_hits": trace.usage.cache_hits or 0,
        "spent_input_tokens": spent.input_tokens, "spent_output_tokens": spent.output_tokens,
        "spent_cached_tokens": spent.cached_tokens, "spent_calls": spent.calls, "wall_s": trace.wall_s,
        "failed_stage": trace.failed_stage or "", "error": trace.error or "", "trace": relative(path, run_dir),
    }


def arm_row(trace: TraceBase, model_spec: str, path: Path, run_dir: Path) -> dict[str, Any]:
    """A trace's row of arms.csv: what every protocol's row has, the protocol's own columns between."""
    protocol = protocol_of(trace)
    return {
        "case_id": trace.case_id, "model_spec": model_spec, "model": trace.model, "protocol": protocol.name,
        "format": protocol.arm_variant(protocol.variant(trace)), "status": trace.status,
        **protocol.row(trace), **_common(trace, model_spec, path, run_dir),
    }


def json_config(config: RunConfig, protocol: AnyProtocol) -> dict[str, Any]:
    """A run config as the protocol's traces record it (JSON values), prompt file hashes included."""
    return {**config.model_dump(mode="json"), "prompts": protocol.prompt_hashes()}


def same_setting(key: str, recorded: Any, expected: Any) -> bool:
    """Whether a trace's recorded setting is the cohort's. The prompts need only agree on the files the
    protocol uses: a trace made before each protocol kept its own prompts also hashed the others'."""
    if key == "prompts" and isinstance(recorded, dict) and isinstance(expected, dict):
        return all(recorded.get(name) == digest for name, digest in expected.items())
    return bool(recorded == expected)


def _log_unexpected(arm: CohortArm, exc: BaseException) -> None:
    """A run records a model's failure in its trace; what reaches here is unforeseen (a bug): its traceback
    goes to the log (without locals), so it is not mistaken for a model failure."""
    log.error("arm_crashed", case=arm.case.id, model=arm.model_spec, error=f"{type(exc).__name__}: {exc}",
              exc_info=exc, file_only=True)


def _failed_row(arm: CohortArm, fmt: str, exc: BaseException) -> dict[str, Any]:
    return {"case_id": arm.case.id, "model_spec": arm.model_spec, "protocol": arm.protocol, "format": fmt,
            "status": "failed",
            "error": redact(f"{type(exc).__name__}: {exc}"), "trace": ""}


@dataclass(frozen=True)
class CohortRun:
    """What every arm of one cohort shares: where it writes (and in which layout), its id, the settings a
    finished trace must have been made with to be reused, who hears of each finished arm, the
    ``arms.jsonl`` index a resume reuses finished arms from, and the reader of a trace it must read."""

    run_dir: Path
    run_id: str
    configs: Mapping[str, RunConfig]  # by protocol
    on_done: Callable[[dict[str, Any]], None]
    layout: Layout = "sharded"
    index: ArmIndex = field(default_factory=ArmIndex)
    read: Callable[[Path], TraceBase] = read_trace

    @cached_property
    def _expected(self) -> dict[str, dict[str, Any]]:
        return {name: json_config(config, get_protocol(name)) for name, config in self.configs.items()}

    def expected(self, arm: CohortArm) -> dict[str, Any]:
        """The run settings a reusable trace of the arm records (its ``config``), prompt files included."""
        return self._expected[arm.protocol]

    def path(self, arm: CohortArm, variant: str) -> Path:
        return arm_path(self.run_dir, arm.case.id, arm.model_spec, variant, self.layout)

    def settings(self, arm: CohortArm) -> str:
        return settings_digest(self.expected(arm), arm.model_spec, arm.case.content_hash())

    def indexed(self, path: Path, arm: CohortArm, variant: str) -> dict[str, Any] | None:
        """The arm's row from ``arms.jsonl`` when its trace is unchanged since it was written there
        (same SHA-256, same settings): the trace is then not read again."""
        key = (arm.case.id, arm.model_spec, variant)
        if key not in self.index.rows:
            return None
        return self.index.reusable(key, relative(path, self.run_dir), path, self.settings(arm))

    def finished(self, path: Path, arm: CohortArm) -> TraceBase | None:
        """The completed trace at ``path``, if there is one, after checking it was made for this arm
        under this cohort's settings; a trace made otherwise is refused, never silently reused."""
        if not path.is_file():
            return None
        try:
            trace = self.read(path)
        except UserError:
            return None  # unreadable (an older crash): run the arm again
        if trace.status != "completed":
            return None
        if trace.case_hash != arm.case.content_hash():
            raise UserError(f"{path}: case_hash: the trace was made from another version of case {arm.case.id!r}")
        if trace.model_spec is not None and trace.model_spec != arm.model_spec:
            raise UserError(f"{path}: model_spec: made with {trace.model_spec!r}, not {arm.model_spec!r}")
        if protocol_of(trace).name != arm.protocol:
            raise UserError(f"{path}: kind: a {trace.kind} trace, not one of protocol {arm.protocol!r}")  # type: ignore[attr-defined]
        changed = sorted(k for k, v in self.expected(arm).items() if not same_setting(k, trace.config.get(k), v))
        if changed:
            raise UserError(f"{path}: config.{changed[0]}: the trace was made under other settings than this "
                            "cohort's (move it away to run the arm again)")
        return trace

    def write(self, trace: TraceBase, arm: CohortArm, path: Path) -> None:
        trace = trace.model_copy(update={"model_spec": arm.model_spec})
        write_trace(path, trace)
        # The index fields go to arms.jsonl only (consilium/cohort/index.py): the file as written, and
        # the settings it was made under.
        self.on_done({**arm_row(trace, arm.model_spec, path, self.run_dir), "resumed": False,
                      "trace_sha256": file_sha256(path) or "", "arm_settings": self.settings(arm)})


async def _run_arm(arm: CohortArm, models: RunModels, run: CohortRun) -> None:
    """The arm's variants that have no finished trace, run by its protocol; the finished ones are reused (their
    rows from arms.jsonl when unchanged since, else read again) and handed to the protocol, which may take what
    the variants share from them (the consilium's role assignment, ai-consilium.txt Fig. 2a)."""
    protocol = get_protocol(arm.protocol)
    todo: list[str] = []
    reused: list[TraceBase] = []
    indexed: list[str] = []
    for variant in arm.formats:
        name = protocol.arm_variant(variant)
        path = run.path(arm, name)
        row = run.indexed(path, arm, name)  # unchanged since arms.jsonl recorded it: reused unread
        if row is not None:
            indexed.append(name)
            run.on_done({**row, "resumed": True})
            continue
        done = run.finished(path, arm)
        if done is None:
            todo.append(variant)
            continue
        reused.append(done)
        run.on_done({**arm_row(done, arm.model_spec, path, run.run_dir), "resumed": True})
    if not todo:
        return
    if not reused and indexed:  # a variant must run: it may need what a variant reused unread holds
        done = run.finished(run.path(arm, indexed[0]), arm)
        reused += [done] if done is not None else []
    written: set[str] = set()

    def write(trace: TraceBase) -> None:
        name = protocol.arm_variant(protocol.variant(trace))
        run.write(trace, arm, run.path(arm, name))
        written.add(name)

    try:
        await protocol.run_arm(arm.case, todo, models, run.configs[arm.protocol], run_id=run.run_id,
                               images=arm.images, reuse=reused, on_trace=write)
    except UserError:
        raise  # the user's to fix (a refused key, an unknown model): it stops the whole cohort
    except Exception as exc:  # an arm's failure is recorded; the cohort goes on
        _log_unexpected(arm, exc)
        for variant in todo:
            name = protocol.arm_variant(variant)
            if name not in written:
                run.on_done(_failed_row(arm, name, exc))


async def run_cohort(arms: list[CohortArm], models: dict[str, RunModels], run: CohortRun, *,
                     parallel_arms: int) -> None:
    """Every arm, ``parallel_arms`` at a time. A :class:`UserError` in any arm (a refused API key, an
    unknown model: HTTP 401/403/404) cancels the others and is raised: every arm would fail alike."""
    gate = asyncio.Semaphore(parallel_arms)

    async def one(arm: CohortArm) -> None:
        async with gate:
            await _run_arm(arm, models[arm.model_spec], run)

    try:
        async with asyncio.TaskGroup() as group:
            for arm in arms:
                group.create_task(one(arm))
    except BaseExceptionGroup as group_error:
        # Raise the first user error as itself, so the CLI prints its one line.
        users = group_error.subgroup(UserError)
        if users is not None:
            raise _first(users) from None
        raise


def _first(group: BaseExceptionGroup[Any]) -> BaseException:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """Progress log: one line per finished arm, appended. A symlink in its place is refused, never
    followed (it could point anywhere)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if path.is_symlink():
            raise UserError(f"{path}: is a symbolic link; consilium appends only to a plain file") from None
        raise UserError(f"{path}: cannot append ({exc.strerror or exc})") from None
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(redact(json.dumps(row)) + "\n")


#: The columns every arms.csv has, even with no arm finished (a cohort stopped at once).
ARM_COLUMNS = ("case_id", "model_spec", "model", "protocol", "format", "status", "stop_reason", "input_tokens",
               "output_tokens", "calls", "cached_tokens", "cache_hits", "spent_input_tokens", "spent_output_tokens",
               "spent_cached_tokens", "spent_calls", "wall_s", "failed_stage", "error", "trace", "resumed")


def write_csv(path: Path, rows: list[dict[str, Any]], *, fields: tuple[str, ...] = ()) -> Path:
    """Rows as CSV, atomically; the columns in order of appearance (``fields`` first when given)."""
    import csv
    import io

    columns: list[str] = list(fields) if not rows else []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return write_text_atomic(path, buffer.getvalue())

