"""A cohort's arms and where their traces go.

An arm is one case with one model in one protocol, run in each of the protocol's variants the cohort
asks for. Traces go into ``arms/<model folder>/<2 hex of sha256(case id)>/``, 256 folders per model, so
no folder holds hundreds of thousands of files; cohorts made before (manifest 1.1) keep their flat
folders. A trace's file name is the variant as the protocol names it in a cohort
(:meth:`~consilium.graphs.base.Protocol.arm_variant`: ``free-form``, ``single-structured``,
``board-agents``), so the arms of several protocols share a model's folders; an arm of a cohort run in
replicates (an experiment's ``replicates:``) adds its replicate index (``<case>.free-form.r2.trace.json``),
so no replicate's file is another's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from consilium.cases import Case
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol
from consilium.runfolder.layout import trace_name

__all__ = ["LAYOUTS", "CohortArm", "Layout", "arm_path", "check_arm_paths", "model_folder", "relative",
           "replicated"]


@dataclass(frozen=True)
class CohortArm:
    """One case with one model in one protocol, in each of its variants (consilium formats, board modes, …)."""

    case: Case
    model_spec: str
    formats: tuple[str, ...]
    protocol: str = "consilium"
    images: tuple[str, ...] = ()  # the case's slide images, resolved against its file's folder
    replicate: int | None = None  # its index (0, 1, …) in a cohort run in replicates; None: not replicated
    seed: int | None = None  # the replicate's sampling seed, replacing the run settings' seed

    def names(self) -> list[str]:
        """The arm's variants as its cohort's files and tables name them."""
        protocol = get_protocol(self.protocol)
        return [protocol.arm_variant(variant) for variant in self.formats]


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


def arm_path(run_dir: Path, case_id: str, model_spec: str, fmt: str, layout: Layout = "sharded",
             replicate: int | None = None) -> Path:
    """``arms/<model folder>/<shard>/<case>.<variant>[.r<replicate>].trace.json``; the shard is the first
    two hex digits of the case id's SHA-256, so a case's variants (and replicates) share a folder. ``flat``
    leaves the shard out."""
    folder = run_dir / "arms" / model_folder(model_spec)
    if layout == "sharded":
        folder = folder / hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:2]
    tail = "" if replicate is None else f".r{replicate}"
    return folder / trace_name(case_id, f"{fmt}{tail}")


def replicated(arms: list[CohortArm], seeds: list[int] | None) -> list[CohortArm]:
    """Each arm once per replicate, replicate i with ``seeds[i]`` (None: the arms as they are)."""
    if seeds is None:
        return arms
    return [replace(arm, replicate=i, seed=seed) for arm in arms for i, seed in enumerate(seeds)]


def check_arm_paths(arms: list[CohortArm], layout: Layout = "sharded") -> None:
    """Refuse a cohort in which two arms (or two protocols' variants of one) would write the same trace file."""
    seen: dict[Path, tuple[str, str, str]] = {}
    for arm in arms:
        for name in arm.names():
            path = arm_path(Path("."), arm.case.id, arm.model_spec, name, layout, arm.replicate)
            key = Path(str(path).casefold())  # one file on a case-insensitive disk
            if key in seen:
                other_spec, other_case, other_protocol = seen[key]
                who = (f"protocols {other_protocol} and {arm.protocol} of {arm.model_spec} / {arm.case.id}"
                       if (other_spec, other_case) == (arm.model_spec, arm.case.id)
                       else f"arms {other_spec} / {other_case} and {arm.model_spec} / {arm.case.id}")
                raise UserError(f"{who} would write the same trace file {path}")
            seen[key] = (arm.model_spec, arm.case.id, arm.protocol)


def relative(path: Path, run_dir: Path) -> str:
    """A path as stored in arms.csv and judgements.csv: relative to the run folder, so a copied or
    moved folder still reads."""
    try:
        return path.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        return str(path)
