"""Run every (case, model, format) arm of a cohort.

One role assignment per (case, model) is shared by both formats (ai-consilium.txt, Fig. 2a). At
most ``concurrency`` model calls are in flight across all arms (the shared model stack's limit), a
failing arm is recorded with its stage and error and the cohort goes on, and each arm's trace is
written as soon as it finishes, so memory stays flat and an interrupted cohort resumes by skipping
arms whose trace is complete (re-used calls come from the response cache).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from consilium.agents.prompting import prompt_hashes
from consilium.board.run import run_board
from consilium.cases import Case, case_files, load_case
from consilium.cases.agentclinic import read_agentclinic
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.board import BoardConfig
from consilium.graphs.consilium import ConsiliumConfig
from consilium.log import get_logger
from consilium.redact import redact
from consilium.simulate import RunModels, run_case
from consilium.traces.io import read_trace, write_trace
from consilium.traces.schema import BoardTrace, Trace, TurnTrace

AnyTrace = Trace | BoardTrace | TurnTrace
log = get_logger(__name__)

__all__ = [
    "ARM_COLUMNS",
    "CohortArm",
    "CohortRun",
    "append_jsonl",
    "arm_path",
    "arm_row",
    "board_row",
    "check_arm_paths",
    "load_cohort",
    "load_cohort_files",
    "model_folder",
    "relative",
    "run_cohort",
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
    """One case with one model, in every variant: consilium formats, or board modes."""

    case: Case
    model_spec: str
    formats: tuple[str, ...]
    protocol: Literal["consilium", "board"] = "consilium"
    images: tuple[str, ...] = ()  # the case's slide images, resolved against its file's folder


def _slug(spec: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in spec).strip("._")[:40] or "model"


def model_folder(model_spec: str) -> str:
    """The folder of a model's arms: a readable slug plus 10 hex digits of the whole spec's sha256, so
    specs that slug alike (``scripted:a/b.yaml`` and ``scripted:a_b.yaml``; long paths cut short)
    never share a folder."""
    return f"{_slug(model_spec)}-{hashlib.sha256(model_spec.encode('utf-8')).hexdigest()[:10]}"


def arm_path(run_dir: Path, case_id: str, model_spec: str, fmt: str) -> Path:
    return run_dir / "arms" / model_folder(model_spec) / f"{case_id}.{fmt}.trace.json"


def check_arm_paths(arms: list[CohortArm]) -> None:
    """Refuse a cohort in which two arms would write the same trace file."""
    seen: dict[Path, tuple[str, str]] = {}
    for arm in arms:
        for fmt in arm.formats:
            path = arm_path(Path("."), arm.case.id, arm.model_spec, fmt)
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


def _common(trace: AnyTrace, model_spec: str, path: Path, run_dir: Path) -> dict[str, Any]:
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


def arm_row(trace: Trace, model_spec: str, path: Path, run_dir: Path) -> dict[str, Any]:
    rounds = trace.rounds
    return {
        "case_id": trace.case_id, "model_spec": model_spec, "model": trace.model, "format": trace.format,
        "status": trace.status, "stop_reason": trace.stop_reason or "", "rounds": len(rounds),
        "r1_dissent": rounds[0].dissent_fraction if rounds else "", "roles": len(trace.roles),
        **_common(trace, model_spec, path, run_dir),
    }


def board_row(trace: BoardTrace, model_spec: str, path: Path, run_dir: Path) -> dict[str, Any]:
    validation = trace.validation
    return {
        "case_id": trace.case_id, "model_spec": model_spec, "model": trace.model, "format": f"board-{trace.mode}",
        "status": trace.status, "stop_reason": trace.stop_reason or "", "turns": len(trace.turns),
        "roles": len({t.role for t in trace.turns}),
        "format_exact": validation.exact if validation else "", "format_dense": validation.dense if validation else "",
        "format_score": validation.score if validation else "",
        "repetition_penalty": validation.repetition_penalty if validation else "",
        **_common(trace, model_spec, path, run_dir),
    }


def _row(trace: AnyTrace, model_spec: str, path: Path, run_dir: Path) -> dict[str, Any]:
    if isinstance(trace, BoardTrace):
        return board_row(trace, model_spec, path, run_dir)
    assert isinstance(trace, Trace)
    return arm_row(trace, model_spec, path, run_dir)


def _log_unexpected(arm: CohortArm, exc: BaseException) -> None:
    """A run records a model's failure in its trace; what reaches here is unforeseen (a bug): its traceback
    goes to the log (without locals), so it is not mistaken for a model failure."""
    log.error("arm_crashed", case=arm.case.id, model=arm.model_spec, error=f"{type(exc).__name__}: {exc}",
              exc_info=exc, file_only=True)


def _failed_row(arm: CohortArm, fmt: str, exc: BaseException) -> dict[str, Any]:
    return {"case_id": arm.case.id, "model_spec": arm.model_spec, "format": fmt, "status": "failed",
            "error": redact(f"{type(exc).__name__}: {exc}"), "trace": ""}


@dataclass(frozen=True)
class CohortRun:
    """What every arm of one cohort shares: where it writes, its id, the settings a finished trace
    must have been made with to be reused, and who hears of each finished arm."""

    run_dir: Path
    run_id: str
    config: ConsiliumConfig | BoardConfig
    on_done: Callable[[dict[str, Any]], None]

    def finished(self, path: Path, arm: CohortArm) -> AnyTrace | None:
        """The completed trace at ``path``, if there is one, after checking it was made for this arm
        under this cohort's settings; a trace made otherwise is refused, never silently reused."""
        if not path.is_file():
            return None
        try:
            trace = read_trace(path)
        except UserError:
            return None  # unreadable (an older crash): run the arm again
        if trace.status != "completed":
            return None
        if trace.case_hash != arm.case.content_hash():
            raise UserError(f"{path}: case_hash: the trace was made from another version of case {arm.case.id!r}")
        if trace.model_spec is not None and trace.model_spec != arm.model_spec:
            raise UserError(f"{path}: model_spec: made with {trace.model_spec!r}, not {arm.model_spec!r}")
        expected = {**self.config.model_dump(mode="json"), "prompts": prompt_hashes()}
        changed = sorted(k for k, v in expected.items() if trace.config.get(k) != v)
        if changed:
            raise UserError(f"{path}: config.{changed[0]}: the trace was made under other settings than this "
                            "cohort's (move it away to run the arm again)")
        return trace

    def write(self, trace: AnyTrace, arm: CohortArm, path: Path) -> None:
        trace = trace.model_copy(update={"model_spec": arm.model_spec})
        write_trace(path, trace)
        self.on_done({**_row(trace, arm.model_spec, path, self.run_dir), "resumed": False})


async def _run_board_arm(arm: CohortArm, models: RunModels, run: CohortRun) -> None:
    assert isinstance(run.config, BoardConfig)
    for mode in arm.formats:
        path = arm_path(run.run_dir, arm.case.id, arm.model_spec, f"board-{mode}")
        done = run.finished(path, arm)
        if done is not None:
            run.on_done({**_row(done, arm.model_spec, path, run.run_dir), "resumed": True})
            continue
        try:
            trace = await run_board(arm.case, mode, models, run.config, run_id=run.run_id,  # type: ignore[arg-type]
                                    images=arm.images)
        except UserError:
            raise  # the user's to fix (a refused key, an unknown model): it stops the whole cohort
        except Exception as exc:  # an arm's failure is recorded; the cohort goes on
            _log_unexpected(arm, exc)
            run.on_done(_failed_row(arm, f"board-{mode}", exc))
            continue
        run.write(trace, arm, path)


async def _run_arm(arm: CohortArm, models: RunModels, run: CohortRun) -> None:
    assert isinstance(run.config, ConsiliumConfig)
    todo: list[str] = []
    roles, shared_calls = None, None
    for fmt in arm.formats:  # re-use a finished format's role assignment
        path = arm_path(run.run_dir, arm.case.id, arm.model_spec, fmt)
        done = run.finished(path, arm)
        if done is None:
            todo.append(fmt)
            continue
        assert isinstance(done, Trace)
        roles, shared_calls = done.roles, [c for c in done.calls if c.stage == "role_assignment"]
        run.on_done({**arm_row(done, arm.model_spec, path, run.run_dir), "resumed": True})
    if not todo:
        return
    written: set[str] = set()

    def write(trace: Trace) -> None:
        run.write(trace, arm, arm_path(run.run_dir, arm.case.id, arm.model_spec, trace.format))
        written.add(trace.format)

    try:
        await run_case(arm.case, todo, models, run.config, run_id=run.run_id,  # type: ignore[arg-type]
                       shared_roles=roles, shared_calls=shared_calls, on_trace=write)
    except UserError:
        raise  # the user's to fix (a refused key, an unknown model): it stops the whole cohort
    except Exception as exc:  # an arm's failure is recorded; the cohort goes on
        _log_unexpected(arm, exc)
        for fmt in todo:
            if fmt not in written:
                run.on_done(_failed_row(arm, fmt, exc))


async def run_cohort(arms: list[CohortArm], models: dict[str, RunModels], run: CohortRun, *,
                     parallel_arms: int) -> None:
    """Every arm, ``parallel_arms`` at a time. A :class:`UserError` in any arm (a refused API key, an
    unknown model: HTTP 401/403/404) cancels the others and is raised: every arm would fail alike."""
    gate = asyncio.Semaphore(parallel_arms)

    async def one(arm: CohortArm) -> None:
        async with gate:
            if arm.protocol == "board":
                await _run_board_arm(arm, models[arm.model_spec], run)
            else:
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
ARM_COLUMNS = ("case_id", "model_spec", "model", "format", "status", "stop_reason", "input_tokens", "output_tokens",
               "calls", "cached_tokens", "cache_hits", "spent_input_tokens", "spent_output_tokens",
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

