"""Run every (case, model, format) arm of a cohort.

One role assignment per (case, model) is shared by both formats (ai-consilium.txt, Fig. 2a). At
most ``concurrency`` model calls are in flight across all arms (the shared model stack's limit), a
failing arm is recorded with its stage and error and the cohort goes on, and each arm's trace is
written as soon as it finishes, so memory stays flat and an interrupted cohort resumes by skipping
arms whose trace is complete (re-used calls come from the response cache).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from consilium.board.run import run_board
from consilium.cases import Case, load_case
from consilium.cases.agentclinic import read_agentclinic
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.board import BoardConfig
from consilium.graphs.consilium import ConsiliumConfig
from consilium.simulate import RunModels, run_case
from consilium.traces.io import read_trace, write_trace
from consilium.traces.schema import BoardTrace, Trace, TurnTrace

__all__ = ["CohortArm", "append_jsonl", "arm_path", "arm_row", "board_row", "load_cohort", "run_cohort", "write_csv"]


def load_cohort(source: Path) -> list[Case]:
    """Cases from a folder of case files or an AgentClinic-style JSONL file; ids must be unique."""
    if source.is_dir():
        files = sorted(p for p in source.iterdir() if p.suffix in (".json", ".yaml", ".yml"))
        cases = [load_case(p) for p in files]
    elif source.suffix == ".jsonl":
        cases = read_agentclinic(source)
    elif source.is_file():
        cases = [load_case(source)]
    else:
        raise UserError(f"{source}: --cases must be a folder of case files or a .jsonl file")
    if not cases:
        raise UserError(f"{source}: no cases found")
    ids = [c.id for c in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UserError(f"{source}: duplicate case ids: {', '.join(repeated[:5])}")
    return cases


@dataclass(frozen=True)
class CohortArm:
    """One case with one model, in every variant: consilium formats, or board modes."""

    case: Case
    model_spec: str
    formats: tuple[str, ...]
    protocol: Literal["consilium", "board"] = "consilium"


def _slug(spec: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in spec)[:60]


def arm_path(run_dir: Path, case_id: str, model_spec: str, fmt: str) -> Path:
    return run_dir / "arms" / _slug(model_spec) / f"{case_id}.{fmt}.trace.json"


def arm_row(trace: Trace, model_spec: str, path: Path) -> dict[str, Any]:
    rounds = trace.rounds
    return {
        "case_id": trace.case_id, "model_spec": model_spec, "model": trace.model, "format": trace.format,
        "status": trace.status, "stop_reason": trace.stop_reason or "", "rounds": len(rounds),
        "r1_dissent": rounds[0].dissent_fraction if rounds else "", "roles": len(trace.roles),
        "input_tokens": trace.usage.total.input_tokens, "output_tokens": trace.usage.total.output_tokens,
        "calls": trace.usage.total.calls, "wall_s": trace.wall_s,
        "failed_stage": trace.failed_stage or "",
        "error": trace.error or "", "trace": str(path),
    }


def board_row(trace: BoardTrace, model_spec: str, path: Path) -> dict[str, Any]:
    validation = trace.validation
    return {
        "case_id": trace.case_id, "model_spec": model_spec, "model": trace.model, "format": f"board-{trace.mode}",
        "status": trace.status, "stop_reason": trace.stop_reason or "", "turns": len(trace.turns),
        "roles": len({t.role for t in trace.turns}),
        "format_exact": validation.exact if validation else "", "format_dense": validation.dense if validation else "",
        "input_tokens": trace.usage.total.input_tokens, "output_tokens": trace.usage.total.output_tokens,
        "calls": trace.usage.total.calls, "wall_s": trace.wall_s,
        "failed_stage": trace.failed_stage or "",
        "error": trace.error or "", "trace": str(path),
    }


def _row(trace: Trace | BoardTrace | TurnTrace, model_spec: str, path: Path) -> dict[str, Any]:
    if isinstance(trace, BoardTrace):
        return board_row(trace, model_spec, path)
    assert isinstance(trace, Trace)
    return arm_row(trace, model_spec, path)


def _done(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        trace = read_trace(path)
    except UserError:
        return False
    return trace.status == "completed"


async def _run_board_arm(arm: CohortArm, models: RunModels, config: BoardConfig, run_dir: Path, run_id: str,
                         on_done: Callable[[dict[str, Any]], None]) -> None:
    for mode in arm.formats:
        path = arm_path(run_dir, arm.case.id, arm.model_spec, f"board-{mode}")
        if _done(path):
            on_done({**_row(read_trace(path), arm.model_spec, path), "resumed": True})
            continue
        try:
            # Cohort cases come without their file's folder, so slide images are not resolved:
            # captions only.
            trace = await run_board(arm.case, mode, models, config, run_id=run_id)  # type: ignore[arg-type]
        except Exception as exc:  # an arm's failure is recorded; the cohort goes on
            on_done({"case_id": arm.case.id, "model_spec": arm.model_spec, "format": f"board-{mode}",
                     "status": "failed", "error": f"{type(exc).__name__}: {exc}", "trace": ""})
            continue
        write_trace(path, trace)
        on_done({**board_row(trace, arm.model_spec, path), "resumed": False})


async def _run_arm(arm: CohortArm, models: RunModels, config: ConsiliumConfig, run_dir: Path, run_id: str,
                   on_done: Callable[[dict[str, Any]], None]) -> None:
    todo = [f for f in arm.formats if not _done(arm_path(run_dir, arm.case.id, arm.model_spec, f))]
    roles, shared_calls = None, None
    for fmt in arm.formats:  # re-use a finished format's role assignment
        path = arm_path(run_dir, arm.case.id, arm.model_spec, fmt)
        if fmt not in todo:
            done = read_trace(path)
            assert isinstance(done, Trace)
            roles, shared_calls = done.roles, [c for c in done.calls if c.stage == "role_assignment"]
            on_done({**arm_row(done, arm.model_spec, path), "resumed": True})
    if not todo:
        return
    written: set[str] = set()

    def write(trace: Trace) -> None:
        path = arm_path(run_dir, arm.case.id, arm.model_spec, trace.format)
        write_trace(path, trace)
        written.add(trace.format)
        on_done({**arm_row(trace, arm.model_spec, path), "resumed": False})

    try:
        await run_case(arm.case, todo, models, config, run_id=run_id,  # type: ignore[arg-type]
                       shared_roles=roles, shared_calls=shared_calls, on_trace=write)
    except Exception as exc:  # an arm's failure is recorded; the cohort goes on
        for fmt in todo:
            if fmt not in written:
                on_done({"case_id": arm.case.id, "model_spec": arm.model_spec, "format": fmt, "status": "failed",
                         "error": f"{type(exc).__name__}: {exc}", "trace": ""})


async def run_cohort(arms: list[CohortArm], models: dict[str, RunModels], config: ConsiliumConfig | BoardConfig, *,
                     run_dir: Path, run_id: str, parallel_arms: int,
                     on_done: Callable[[dict[str, Any]], None]) -> None:
    gate = asyncio.Semaphore(parallel_arms)

    async def one(arm: CohortArm) -> None:
        async with gate:
            if arm.protocol == "board":
                assert isinstance(config, BoardConfig)
                await _run_board_arm(arm, models[arm.model_spec], config, run_dir, run_id, on_done)
            else:
                assert isinstance(config, ConsiliumConfig)
                await _run_arm(arm, models[arm.model_spec], config, run_dir, run_id, on_done)

    await asyncio.gather(*(one(arm) for arm in arms))


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """Progress log: one line per finished arm (an append of one short line)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    import csv
    import io

    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return write_text_atomic(path, buffer.getvalue())

