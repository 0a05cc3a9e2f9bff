"""Running a planned cohort in this process: its arms and models prepared, its manifest opened under the
run folder's lock, every arm run with a progress bar (or one line per arm in a batch job's log), and
arms.csv kept complete row by row; consilium/cohort/finish.py then judges and closes it."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from consilium import aio
from consilium.cohort.arms import CohortArm, check_arm_paths, replicated
from consilium.cohort.finish import finish
from consilium.cohort.index import INDEX_FIELDS, ArmIndex
from consilium.cohort.lock import RunLock, clean_temp_files
from consilium.cohort.progress import ArmTally, ItemProgress
from consilium.cohort.rows import ARM_COLUMNS, REPLICATE_COLUMNS, row_key, variant_columns
from consilium.cohort.run import CohortRun, run_cohort
from consilium.cohort.tables import CsvLog, append_jsonl, write_csv
from consilium.errors import UserError
from consilium.fileio import make_folder
from consilium.graphs.base import RunModels
from consilium.graphs.registry import get_protocol
from consilium.log import attach_run_log, get_logger
from consilium.models import ChatModel
from consilium.models.factory import build_model, build_ref
from consilium.models.refs import parse_model_ref
from consilium.runfolder.folder import RunFolder
from consilium.spec.manifest import CohortManifest, new_manifest, write_cohort_manifest

if TYPE_CHECKING:
    from consilium.cohort.plan import Plan

__all__ = ["execute", "open_manifest", "prepare", "record_abort", "run_plan", "sorted_rows"]

log = get_logger(__name__)


def prepare(plan: Plan) -> tuple[list[CohortArm], dict[str, ChatModel], ChatModel | None]:
    """The plan's arms, one per (case, model, protocol), refused if two would share a file, and its models,
    every one opened before anything is written: a bad spec or model file leaves no run folder."""
    s = plan.settings
    arms = replicated([CohortArm(case, spec, tuple(s.variants_of(name)), name,
                                 plan.images.get(case.id, ()) if get_protocol(name).uses_slides else ())
                       for case in plan.cases for spec in s.models for name in s.protocols], s.seeds)
    check_arm_paths(arms, plan.manifest.layout if plan.manifest is not None else "sharded")
    models = {spec: build_model(spec, plan.options_for(spec))
              for spec in dict.fromkeys([*s.models, *([s.moderator_model] if s.moderator_model else [])])}
    judge = build_ref(parse_model_ref(s.judge_model), plan.options) if plan.rubrics and s.judge_model else None
    return arms, models, judge


def open_manifest(plan: Plan) -> CohortManifest:
    """Under the run's lock: the run log attached, a resumed folder's temp files cleaned, and the
    manifest written as running before any call, so a killed cohort has its settings."""
    attach_run_log(plan.run_dir)
    if plan.manifest is not None:
        removed = clean_temp_files(plan.run_dir)
        log.info("cohort_resumed", run_id=plan.run_dir.name, temp_files_removed=removed)
        manifest = plan.manifest.model_copy(update={"status": "running", "error": None})
    else:
        seed = plan.configs[plan.settings.protocols[0]].seed
        manifest = new_manifest(plan.run_dir.name, list(sys.argv), plan.settings, seed, plan.spec)
    write_cohort_manifest(plan.run_dir, manifest)
    return manifest


def record_abort(plan: Plan, manifest: CohortManifest, exc: Exception) -> None:
    """A user error (a refused key, a full disk) or a bug: the manifest says the cohort stopped, and
    why; a user error is raised again as one line naming the stop (the caller re-raises a bug)."""
    reason = str(exc) if isinstance(exc, UserError) else f"internal error: {type(exc).__name__}: {exc}"
    write_cohort_manifest(plan.run_dir, manifest.model_copy(update={"status": "aborted", "error": reason}))
    if isinstance(exc, UserError):
        raise UserError(f"cohort stopped: {exc}") from None


def arm_count(arms: list[CohortArm]) -> int:
    """Rows the arms make: one per variant."""
    return sum(len(arm.formats) for arm in arms)


def sorted_rows(rows: dict[tuple[str, str, str, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """arms.csv's order: case id, model spec, format, replicate."""
    return sorted(rows.values(), key=row_key)


def execute(plan: Plan, arms: list[CohortArm], models: dict[str, ChatModel], judge: ChatModel | None,
            manifest: CohortManifest, kept: dict[tuple[str, str, str, int], dict[str, Any]] | None = None) -> int:
    """Every arm of the plan, then judging and the summary (0, or 1 when an arm failed); ``kept``, when
    given, receives the rows of arms.csv by arm (the Python API returns them)."""
    run_dir, s = plan.run_dir, plan.settings
    run_id = run_dir.name
    # one limit per spec; --moderator-model: one moderator for every arm
    stacks = {spec: RunModels(panel=models[spec], moderator=models[s.moderator_model or spec]) for spec in s.models}
    rows: dict[tuple[str, str, str, int], dict[str, Any]] = {} if kept is None else kept
    tally = ArmTally()  # running counts: re-summing every row on each arm is quadratic
    total = arm_count(arms)
    started = time.perf_counter()
    # a bar on a terminal; a batch job's log shows one line per arm, with the bar's counts
    progress = ItemProgress("arms", total, tail="failed 0 · 0 tokens", transient=True)
    # arms.csv grows row by row as arms finish (complete at every moment), then is rewritten sorted.
    arms_log = CsvLog(RunFolder(run_dir).arms_csv, (*ARM_COLUMNS, *variant_columns(s.protocols),
                                             *(REPLICATE_COLUMNS if s.seeds is not None else ())))

    def on_done(row: dict[str, Any]) -> None:
        key = row_key(row)
        if not row.get("resumed"):  # a resumed arm's row is in arms.jsonl already
            append_jsonl(RunFolder(run_dir).arms_jsonl, row)
        row = {k: v for k, v in row.items() if k not in INDEX_FIELDS}
        tally.add(row, rows.get(key))
        rows[key] = row
        arms_log.append([row])
        log.info("arm_finished", case=row["case_id"], model=row["model_spec"], format=row["format"],
                 status=row["status"], resumed=bool(row.get("resumed")), error=row.get("error") or None)
        note = " (resumed)" if row.get("resumed") else f": {row['error']}" if row["status"] != "completed" else ""
        replicate = f" · r{row['replicate']}" if row.get("replicate") not in (None, "") else ""
        progress.advance(f"{row['case_id']} · {row['format']}{replicate} · {row['model_spec']}",
                         f"{row['status']}{note}",
                         tail=f"failed {tally.failed} · {tally.tokens:,} tokens", done=tally.done)

    resumed = plan.manifest is not None
    cohort = CohortRun(run_dir=run_dir, run_id=run_id, configs=plan.configs, on_done=on_done,
                       layout=manifest.layout,
                       index=ArmIndex.read(RunFolder(run_dir).arms_jsonl) if resumed else ArmIndex())

    async def go() -> None:
        try:
            await run_cohort(arms, stacks, cohort, parallel_arms=max(1, s.concurrency))
        finally:
            for model in models.values():
                await model.aclose()

    try:
        with arms_log, progress:
            aio.run(go())
    finally:
        write_csv(RunFolder(run_dir).arms_csv, sorted_rows(rows), fields=ARM_COLUMNS)  # the arms done, if stopped
    return finish(plan, manifest, lambda: sorted_rows(rows), judge, started)


def run_plan(plan: Plan, kept: dict[tuple[str, str, str, int], dict[str, Any]] | None = None, *,
             resuming: str | None = None) -> int:
    """A planned cohort run here: models opened before the folder is made, the manifest written under the
    folder's lock, and a stop recorded in it; ``resuming``, the line a resume says first (how much of the plan
    the folder holds), is printed once the lock is held."""
    arms, models, judge = prepare(plan)
    make_folder(plan.run_dir)
    with RunLock(plan.run_dir):
        if resuming is not None:
            print(resuming, file=sys.stderr)
        manifest = open_manifest(plan)
        try:
            return execute(plan, arms, models, judge, manifest, kept)
        except Exception as exc:
            record_abort(plan, manifest, exc)
            raise
