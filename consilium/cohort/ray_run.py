"""``cohort --ray``: a cohort's cases in partitions, each a Ray task running the ordinary async cohort.

The cases are split by a stable hash of their id (consilium/cohort/shard.py), so a case's arms stay in
one worker and a case's calls reach the replica its id routes to from one process. Each task runs
:func:`~consilium.cohort.run.run_cohort` — the function a local cohort runs — into a scratch folder on
its own node and puts each finished arm (its row and its trace's text) on a Ray queue as soon as it
finishes; the driver takes them off and writes the one run folder a local cohort writes. A resumed
cohort ships each partition its finished traces, which the task then reuses as a local resume does.

Ray is an optional extra (``pip install consilium[ray]``); nothing here imports it at module level.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from consilium import aio
from consilium.cohort.arms import CohortArm, Layout, arm_path, relative
from consilium.cohort.run import CohortRun, run_cohort
from consilium.cohort.shard import partition
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.base import RunModels
from consilium.models.factory import ModelOptions, build_model
from consilium.redact import register_secret
from consilium.traces.config import RunConfig

__all__ = ["Finished", "Partition", "connect", "partitions", "require_ray", "stream"]

#: One finished arm from a worker: its arms.csv row and, unless it was resumed, its trace file's text.
Finished = tuple[dict[str, Any], str | None]


def require_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UserError("--ray: Ray is not installed; pip install consilium[ray]") from None
    return ray


@dataclass(frozen=True)
class Partition:
    """The arms one Ray task runs, with the traces of them already finished (relative path → text)."""

    arms: list[CohortArm]
    finished: dict[str, str]


def connect(address: str | None) -> bool:
    """Join the Ray cluster at ``address`` (None: ``$RAY_ADDRESS``, else a local instance), unless this
    process has joined one already. Returns whether it joined here (and so should leave)."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    # A cluster's own settings stand; a local instance (no address) starts without its dashboard.
    local: dict[str, Any] = {} if address else {"include_dashboard": False, "log_to_driver": False}
    try:
        ray.init(address=address or None, **local)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise UserError(f"--ray: cannot join the Ray cluster at {address or 'a local instance'} ({exc})") from None
    return True


def partitions(arms: list[CohortArm], run_dir: Path, layout: Layout) -> list[Partition]:
    """One partition per CPU of the cluster (at most one per case), by case id; empty ones dropped."""
    ray = require_ray()
    cpus = int(ray.cluster_resources().get("CPU", 1))
    count = max(1, min(cpus, len({arm.case.id for arm in arms})))
    parts = []
    for group in partition(arms, [arm.case.id for arm in arms], count):
        if not group:
            continue
        finished = {}
        for arm in group:
            for name in arm.names():
                path = arm_path(run_dir, arm.case.id, arm.model_spec, name, layout, arm.replicate)
                if path.is_file():
                    finished[relative(path, run_dir)] = path.read_text(encoding="utf-8")
        parts.append(Partition(arms=group, finished=finished))
    return parts


def run_partition(part: Partition, options: ModelOptions, configs: Mapping[str, RunConfig], run_id: str,
                  parallel_arms: int, layout: Layout, queue: Any) -> str | None:
    """A Ray task's body: the partition's arms by the local cohort's code (``configs``: each protocol's run
    settings), each finished arm put on ``queue``. Returns a user error's one line (the driver raises it),
    None when all arms ran."""
    register_secret(options.api_key)  # unpickled options skip __post_init__: mask the key here too
    scratch = Path(tempfile.mkdtemp(prefix="consilium-ray-"))
    try:
        for name, text in part.finished.items():
            write_text_atomic(scratch / name, text)
        specs = list(dict.fromkeys(arm.model_spec for arm in part.arms))
        models = {spec: build_model(spec, options) for spec in specs}
        stacks = {spec: RunModels(panel=model, moderator=model) for spec, model in models.items()}

        def on_done(row: dict[str, Any]) -> None:
            fresh = bool(row.get("trace")) and not row.get("resumed")
            queue.put((row, (scratch / row["trace"]).read_text(encoding="utf-8") if fresh else None))

        run = CohortRun(run_dir=scratch, run_id=run_id, configs=configs, on_done=on_done, layout=layout)

        async def go() -> None:
            try:
                await run_cohort(part.arms, stacks, run, parallel_arms=parallel_arms)
            finally:
                for model in models.values():
                    await model.aclose()

        aio.run(go())
    except UserError as exc:
        return str(exc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None


def stream(parts: list[Partition], options: ModelOptions, configs: Mapping[str, RunConfig], run_id: str,
           parallel_arms: int, layout: Layout) -> Iterator[Finished]:
    """Run every partition as a Ray task and yield each finished arm as it arrives. A user error in
    any task cancels the others and is raised as itself."""
    ray = require_ray()
    from ray.util.queue import Queue

    queue = Queue(actor_options={"num_cpus": 0})
    task = ray.remote(num_cpus=1)(run_partition)
    pending = [task.remote(part, options, dict(configs), run_id, parallel_arms, layout, queue) for part in parts]
    try:
        while True:
            waiting = queue.qsize()
            if waiting:
                yield from queue.get_nowait_batch(waiting)
                continue
            if not pending:
                break  # every task has returned, so every arm it put is taken
            done, pending = ray.wait(pending, timeout=0.05)
            for ref in done:
                error = ray.get(ref)
                if error is not None:
                    raise UserError(error)
    finally:
        for ref in pending:
            ray.cancel(ref)
        queue.shutdown(force=True)
