"""Run every arm of a cohort: each (case, model, protocol) in the protocol's variants.

One role assignment per (case, model) is shared by a consilium's formats (ai-consilium.txt, Fig. 2a). At
most ``concurrency`` model calls are in flight across all arms (the shared model stack's limit), a
failing arm is recorded with its stage and error and the cohort goes on, and each arm's trace is
written as soon as it finishes, so memory stays flat and an interrupted cohort resumes by skipping
arms whose trace is complete (re-used calls come from the response cache). A trace is written in a worker
thread, atomically as every file is (consilium/fileio.py): its ``fsync`` waits on the disk, and on the event
loop that wait would hold back every call in flight. Where traces go:
consilium/cohort/arms.py; their rows: consilium/cohort/rows.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from consilium.cohort.arms import CohortArm, Layout, arm_path, relative
from consilium.cohort.index import ArmIndex, file_sha256, settings_digest
from consilium.cohort.rows import arm_row, failed_row, row_key
from consilium.errors import UserError
from consilium.graphs.base import RunModels
from consilium.graphs.registry import AnyProtocol, get_protocol, protocol_of, read_trace
from consilium.log import get_logger
from consilium.traces.config import RunConfig
from consilium.traces.io import write_trace
from consilium.traces.schema import TraceBase

log = get_logger(__name__)

__all__ = ["CohortRun", "json_config", "run_cohort", "same_setting"]


def json_config(config: RunConfig, protocol: AnyProtocol) -> dict[str, Any]:
    """A run config as the protocol's traces record it (JSON values), prompt file hashes included."""
    return {**config.model_dump(mode="json"), "prompts": protocol.prompt_hashes()}


def same_setting(key: str, recorded: Any, expected: Any) -> bool:
    """Whether a trace's recorded setting is the cohort's. The prompts need only agree on the files both
    list: a trace made before each protocol kept its own prompts also hashed the others', and one made before
    a text moved from code into a prompt file (the board moderator's sentences) could not hash that file."""
    if key == "prompts" and isinstance(recorded, dict) and isinstance(expected, dict):
        return all(recorded[name] == digest for name, digest in expected.items() if name in recorded)
    return bool(recorded == expected)


def _log_unexpected(arm: CohortArm, exc: BaseException) -> None:
    """A run records a model's failure in its trace; what reaches here is unforeseen (a bug): its traceback
    goes to the log (without locals), so it is not mistaken for a model failure."""
    log.error("arm_crashed", case=arm.case.id, model=arm.model_spec, protocol=arm.protocol,
              error=f"{type(exc).__name__}: {exc}", exc_info=exc, file_only=True)


@dataclass(frozen=True)
class CohortRun:
    """What every arm of one cohort shares: where it writes (and in which layout), its id, each protocol's
    run settings (a finished trace must have been made with them to be reused), who hears of each
    finished arm, the ``arms.jsonl`` index a resume reuses finished arms from, and the reader of a trace
    it must read."""

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

    def config(self, arm: CohortArm) -> RunConfig:
        """The arm's run settings: its protocol's, with a replicate's own seed."""
        config = self.configs[arm.protocol]
        return config if arm.seed is None else config.model_copy(update={"seed": arm.seed})

    def expected(self, arm: CohortArm) -> dict[str, Any]:
        """The run settings a reusable trace of the arm records (its ``config``), prompt files included."""
        expected = self._expected[arm.protocol]
        return expected if arm.seed is None else {**expected, "seed": arm.seed}

    def path(self, arm: CohortArm, variant: str) -> Path:
        return arm_path(self.run_dir, arm.case.id, arm.model_spec, variant, self.layout, arm.replicate)

    def settings(self, arm: CohortArm) -> str:
        return settings_digest(self.expected(arm), arm.model_spec, arm.case.content_hash())

    def indexed(self, path: Path, arm: CohortArm, variant: str) -> dict[str, Any] | None:
        """The arm's row from ``arms.jsonl`` when its trace is unchanged since it was written there
        (same SHA-256, same settings): the trace is then not read again."""
        key = row_key({"case_id": arm.case.id, "model_spec": arm.model_spec, "format": variant,
                       "replicate": arm.replicate})
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
        recorded = trace.config.model_dump(mode="json")
        changed = sorted(k for k, v in self.expected(arm).items() if not same_setting(k, recorded.get(k), v))
        if changed:
            raise UserError(f"{path}: config.{changed[0]}: the trace was made under other settings than this "
                            "cohort's (move it away to run the arm again)")
        return trace

    async def write(self, trace: TraceBase, arm: CohortArm, path: Path) -> None:
        """The arm's trace written off the event loop, then its row told (once the file is whole)."""
        trace = trace.model_copy(update={"model_spec": arm.model_spec})
        digest = await asyncio.to_thread(_write_and_digest, path, trace)
        # The index fields go to arms.jsonl only (consilium/cohort/index.py): the file as written, and
        # the settings it was made under.
        self.on_done({**arm_row(trace, arm.model_spec, path, self.run_dir, arm), "resumed": False,
                      "trace_sha256": digest, "arm_settings": self.settings(arm)})


def _write_and_digest(path: Path, trace: TraceBase) -> str:
    """Write the trace atomically and hash the file as written (a worker thread's part of a write)."""
    write_trace(path, trace)
    return file_sha256(path) or ""


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
        run.on_done({**arm_row(done, arm.model_spec, path, run.run_dir, arm), "resumed": True})
    if not todo:
        return
    if not reused and indexed:  # a variant must run: it may need what a variant reused unread holds
        done = run.finished(run.path(arm, indexed[0]), arm)
        reused += [done] if done is not None else []
    writes: dict[str, asyncio.Task[None]] = {}

    def write(trace: TraceBase) -> None:  # the protocol tells of a trace as it is done: written meanwhile
        name = protocol.arm_variant(protocol.variant(trace))
        writes[name] = asyncio.ensure_future(run.write(trace, arm, run.path(arm, name)))

    try:
        traces = await protocol.run_arm(arm.case, todo, models, run.config(arm), run_id=run.run_id,
                                        images=arm.images, reuse=reused, on_trace=write)
    except UserError:
        await _settle(writes, arm, run)
        raise  # the user's to fix (a refused key, an unknown model): it stops the whole cohort
    except Exception as exc:  # an arm's failure is recorded; the cohort goes on
        _log_unexpected(arm, exc)
        told = await _settle(writes, arm, run)
        for variant in todo:
            name = protocol.arm_variant(variant)
            if name not in told:
                run.on_done(failed_row(arm, name, exc))
        return
    # A protocol need not tell of each trace as it is done: what it returns and did not tell is written now,
    # and a variant it ran without a trace is a failed arm, never one that vanishes.
    asked = {protocol.arm_variant(variant) for variant in todo}
    for trace in traces:
        name = protocol.arm_variant(protocol.variant(trace))
        if name in asked and name not in writes:  # a variant it was asked for (never a reused one again)
            write(trace)
    told = await _settle(writes, arm, run)
    for variant in todo:
        name = protocol.arm_variant(variant)
        if name not in told:
            run.on_done(failed_row(arm, name, RuntimeError(f"protocol {protocol.name!r} returned no trace for "
                                                           f"variant {variant!r}")))


async def _settle(writes: dict[str, asyncio.Task[None]], arm: CohortArm, run: CohortRun) -> set[str]:
    """Wait for the arm's trace writes; the variants whose row is told (written, or failed to write). A
    write the user must fix (a full disk) stops the cohort; an unforeseen one fails its variant."""
    if writes:
        await asyncio.wait(writes.values())
    for name, task in writes.items():
        error = task.exception()
        if isinstance(error, UserError):
            raise error
        if error is not None:
            _log_unexpected(arm, error)
            run.on_done(failed_row(arm, name, error))
    return set(writes)


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
