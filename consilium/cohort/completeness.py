"""How much of its plan a cohort folder holds, so that no report of a stopped or running cohort reads as complete.

The plan is the manifest's: every case it lists (those of its shard, for a shard folder) × every panel model
× every protocol in each of its variants × every replicate. An arm is *finished* when arms.csv has its row
(completed or failed); the others are *missing*. The cohort's status is the manifest's, except that a
manifest still saying ``running`` while no process holds the folder's lock (:func:`lock_held`) belongs to a
cohort that was killed (or whose machine went down) before it could close its manifest: it reads as
``aborted``. A folder without a manifest.json (made by hand, or by a consilium older than 0.2) has no known
plan, and nothing is said (docs/cohorts.md, "Partial cohorts").
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.cohort.rows import row_key
from consilium.cohort.shard import Shard
from consilium.graphs.registry import get_protocol
from consilium.natural import natural_key
from consilium.spec.manifest import MANIFEST, CohortManifest, load_manifest

__all__ = ["KILLED", "Completeness", "MissingArm", "cohort_completeness", "lock_held", "planned_arms"]

#: Why a ``running`` manifest whose folder no process holds reads as aborted.
KILLED = "stopped without closing its manifest (its process was killed, or its machine went down)"


@dataclass(frozen=True)
class MissingArm:
    """A planned arm without a row in arms.csv."""

    case_id: str
    model_spec: str
    protocol: str
    format: str
    replicate: int | None

    def row(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "model_spec": self.model_spec, "protocol": self.protocol,
                "format": self.format, **({} if self.replicate is None else {"replicate": self.replicate})}

    def label(self) -> str:
        tail = "" if self.replicate is None else f" · r{self.replicate}"
        return f"{self.case_id} · {self.model_spec} · {self.format}{tail}"


@dataclass(frozen=True)
class Completeness:
    """A cohort folder against its plan: its status, the arms planned and finished, those missing."""

    status: str  # completed, running or aborted
    planned: int
    finished: int
    missing: tuple[MissingArm, ...]
    error: str | None = None  # why it stopped, for an aborted cohort

    @property
    def partial(self) -> bool:
        """Whether a table of the folder may lack arms: some planned arm is missing, or the cohort did not
        complete (a running cohort adds arms, an aborted one may lack its judgements)."""
        return bool(self.missing) or self.status != "completed"

    def summary(self) -> str:
        """``8 of 40 planned arms finished (status: aborted: why)``."""
        why = f": {self.error}" if self.error and self.status == "aborted" else ""
        return f"{self.finished} of {self.planned} planned arms finished (status: {self.status}{why})"

    def mark(self) -> str:
        """What every table of a partial cohort carries in its title: ``partial: 8 of 40 planned arms``."""
        return f"partial: {self.finished} of {self.planned} planned arms, cohort {self.status}"

    def title(self, title: str) -> str:
        """A table's title, marked when the cohort is partial."""
        return f"{title} [{self.mark()}]" if self.partial else title


def lock_held(run_dir: Path) -> bool:
    """Whether a process holds the folder's :class:`~consilium.cohort.lock.RunLock` now (a cohort running
    or resuming in it). Read only: the lock file is never made, and a shared lock taken for an instant is given
    back at once. A folder shared over a file system that does not pass locks between machines reads as not
    held."""
    try:
        fd = os.open(run_dir / ".lock", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False  # never locked: no cohort runs in it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def planned_arms(manifest: CohortManifest) -> dict[tuple[str, str, str, int], MissingArm]:
    """Every arm the manifest plans, by its arms.csv key (consilium/cohort/rows.py, ``row_key``), in natural
    case order."""
    s = manifest.settings
    shard = Shard.parse(s.shard) if s.shard else None
    cases = sorted((c for c in s.case_hashes if shard is None or shard.holds(c)), key=natural_key)
    replicates: list[int | None] = list(range(len(s.seeds))) if s.seeds is not None else [None]
    planned = {}
    for case_id in cases:
        for spec in s.models:
            for name in s.protocols:
                protocol = get_protocol(name, flag=f"{MANIFEST}: settings.protocols")
                for variant in s.variants_of(name):
                    for replicate in replicates:
                        arm = MissingArm(case_id, spec, name, protocol.arm_variant(variant), replicate)
                        planned[row_key(arm.row())] = arm
    return planned


def cohort_completeness(run_dir: Path, rows: Iterable[dict[str, Any]]) -> Completeness | None:
    """The folder's arms.csv ``rows`` against its manifest's plan; None for a folder without a manifest.
    A manifest that cannot be read is one line naming it (:class:`~consilium.errors.UserError`)."""
    if not (run_dir / MANIFEST).is_file():
        return None
    manifest = load_manifest(run_dir / MANIFEST)
    planned = planned_arms(manifest)
    present = {row_key(row) for row in rows if row.get("case_id") and row.get("model_spec") and row.get("format")}
    missing = tuple(arm for key, arm in planned.items() if key not in present)
    status, error = manifest.status, manifest.error
    if status == "running" and not lock_held(run_dir):
        status, error = "aborted", KILLED
    return Completeness(status, len(planned), len(planned) - len(missing), missing, error)
