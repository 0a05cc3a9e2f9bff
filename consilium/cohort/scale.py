"""A cohort beyond one process: a shard of its cases (the study's ``shard``, ``--shard I/N``) and its cases run
as Ray tasks (``ray``, ``--ray [ADDRESS]``).

A shard is the plan of the local cohort (consilium/cohort/plan.py) with its cases cut to the shard's, run as an
ordinary local cohort whose manifest records the shard; ``cohort merge`` joins the shards. On Ray the plan's
arms run as tasks (consilium/cohort/ray_run.py) and the run folder a local cohort writes is written here, from
each arm streamed back. Both start from the local plan, so a setting means the same with and without them, and
a resume of either folder is an ordinary resume (a shard's folder stays its shard).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

from consilium import aio
from consilium.cohort import ray_run
from consilium.cohort.arms import CohortArm
from consilium.cohort.execute import arm_count, open_manifest, prepare, record_abort, sorted_rows
from consilium.cohort.finish import finish
from consilium.cohort.index import INDEX_FIELDS
from consilium.cohort.lock import RunLock
from consilium.cohort.plan import Plan
from consilium.cohort.rows import ARM_COLUMNS, row_key
from consilium.cohort.shard import Shard
from consilium.cohort.tables import append_jsonl, write_csv
from consilium.errors import UserError
from consilium.fileio import make_folder, write_text_atomic
from consilium.log import get_logger
from consilium.models import ChatModel
from consilium.runfolder.folder import RunFolder
from consilium.spec.manifest import CohortManifest

__all__ = ["run_on_ray", "shard_plan"]

log = get_logger(__name__)

Rows = dict[tuple[str, str, str, int], dict[str, Any]]


def shard_plan(plan: Plan, given: str | None) -> Plan:
    """The plan with its cases cut to the shard ``given`` (``"I/N"``), or to the shard a resumed folder
    records; unchanged when neither names one. The manifest keeps every case's hash, so a resume checks the
    whole folder of cases, and records the shard; a resume keeps its shard."""
    kept = plan.manifest.settings.shard if plan.manifest is not None else None
    try:
        flag = Shard.parse(given) if given is not None else None
    except ValueError as exc:
        raise UserError(f"--shard: {exc}") from None
    if plan.manifest is not None and flag is not None and str(flag) != kept:
        raise UserError(f"--shard: {str(flag)!r} differs from the resumed cohort's {kept!r} "
                        f"({plan.run_dir}/manifest.json); a resumed cohort keeps its settings")
    shard = flag or (Shard.parse(kept) if kept else None)
    if shard is None:
        return plan
    settings = plan.settings.model_copy(update={"shard": str(shard)})
    return dataclasses.replace(plan, cases=[c for c in plan.cases if shard.holds(c.id)], settings=settings)


def run_on_ray(plan: Plan, address: str, kept: Rows, *, resuming: str | None = None) -> int:
    """The planned cohort with its arms run as Ray tasks on the cluster at ``address`` (``""``: ``$RAY_ADDRESS``,
    else a local instance): the folder, lock, manifest and stop record of a local run (execute.py
    ``run_plan``); ``kept`` receives the rows of arms.csv by arm."""
    arms, models, judge = prepare(plan)  # every model opened before anything is written, as a local run's
    aio.run(_close(models))  # each Ray worker opens its own
    joined = ray_run.connect(address or None)
    make_folder(plan.run_dir)
    try:
        with RunLock(plan.run_dir):
            if resuming is not None:
                print(resuming, file=sys.stderr)
            manifest = open_manifest(plan)
            try:
                return _execute_on_ray(plan, arms, judge, manifest, kept)
            except Exception as exc:
                record_abort(plan, manifest, exc)
                raise
    finally:
        if joined:
            ray_run.require_ray().shutdown()


async def _close(models: dict[str, ChatModel]) -> None:
    for model in models.values():
        await model.aclose()


def _execute_on_ray(plan: Plan, arms: list[CohortArm], judge: ChatModel | None, manifest: CohortManifest,
                    rows: Rows) -> int:
    """What the local cohort's ``execute`` does, with the arms run by Ray tasks: each streamed arm's
    trace is written at its relative path, then its row appended, as a local arm's is."""
    run_dir, s = plan.run_dir, plan.settings
    total = arm_count(arms)
    started = time.perf_counter()
    root = run_dir.resolve()

    def table() -> list[dict[str, Any]]:
        return sorted_rows(rows)

    parts = ray_run.partitions(arms, run_dir, manifest.layout)
    log.info("cohort_on_ray", run_id=run_dir.name, partitions=len(parts), arms=total)
    try:
        for row, text in ray_run.stream(parts, plan.options, plan.configs, run_dir.name, max(1, s.concurrency),
                                        manifest.layout):
            if text is not None:
                target = (run_dir / row["trace"]).resolve()
                if not target.is_relative_to(root):
                    raise UserError(f"{row['trace']}: a worker's trace path points outside {run_dir}")
                write_text_atomic(target, text)
            if not row.get("resumed"):  # a resumed arm's row is in arms.jsonl already
                append_jsonl(RunFolder(run_dir).arms_jsonl, row)
            row = {k: v for k, v in row.items() if k not in INDEX_FIELDS}  # arms.jsonl's own
            rows[row_key(row)] = row
            log.info("arm_finished", case=row["case_id"], model=row["model_spec"], format=row["format"],
                     status=row["status"], resumed=bool(row.get("resumed")), error=row.get("error") or None)
            note = " (resumed)" if row.get("resumed") else f": {row['error']}" if row["status"] != "completed" else ""
            print(f"[{len(rows)}/{total}] {row['case_id']} · {row['format']} · {row['model_spec']}: "
                  f"{row['status']}{note}", file=sys.stderr, flush=True)
    finally:
        write_csv(RunFolder(run_dir).arms_csv, table(), fields=ARM_COLUMNS)
    return finish(plan, manifest, table, judge, started, f" on Ray ({len(parts)} partitions)")
