"""The finished cohort an ablation re-runs: its manifest, its completed consilium arms and their judgements."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from consilium.errors import UserError
from consilium.graphs.arms import require
from consilium.judges import record
from consilium.judges.record import Judgement
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import judgements_of
from consilium.spec.manifest import MANIFEST, CohortManifest, read_manifest

__all__ = ["Cohort", "OriginalArm", "read_cohort", "read_judgement"]


@dataclass(frozen=True)
class OriginalArm:
    """A completed consilium arm of the cohort, as its arms.csv row names it."""

    case_id: str
    model_spec: str
    model: str
    format: str
    replicate: str  #: the replicate's index, "" in a cohort not run in replicates
    trace: str  #: relative to the run folder

    def path(self, run_dir: Path) -> Path:
        return run_dir / self.trace


@dataclass(frozen=True)
class Cohort:
    run_dir: Path
    manifest: CohortManifest
    arms: list[OriginalArm]
    #: the consilium arms that did not complete (failed): not ablated, so in no pair; each "case · format (status)"
    not_completed: list[str] = field(default_factory=list)


def read_cohort(run_dir: Path) -> Cohort:
    """The cohort in ``run_dir`` and its completed consilium arms; one line naming what is wrong otherwise."""
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    if not (run_dir / MANIFEST).is_file():
        raise UserError(f"{run_dir}: no {MANIFEST} (not a cohort folder)")
    manifest = read_manifest(run_dir)
    folder = RunFolder(run_dir)
    table = folder.arms_csv
    if not folder.is_cohort:
        raise UserError(f"{table}: not found (the cohort has no arms table)")
    rows = folder.arms(named=False)
    missing = [c for c in ("case_id", "model_spec", "protocol", "format", "status", "trace")
               if rows and c not in rows[0].model_fields_set]
    if missing:
        raise UserError(f"{table}: {missing[0]}: column missing")
    arms = [OriginalArm(r.case_id, r.model_spec, r.model, r.format, "" if r.replicate is None else str(r.replicate),
                        r.trace)
            for r in rows if r.protocol == "consilium" and r.completed and r.trace]
    if not arms:
        require([r.protocol for r in rows], "ablation", f"ablate {run_dir}")  # a folder of another protocol's arms
        raise UserError(f"{table}: no completed consilium arm to ablate")
    for arm in arms:  # every record the ablation may read, checked before an arm runs or a file is written
        trace = arm.path(run_dir)
        for file in judgements_of(trace):
            record.read_judgement(file)
    not_completed = [f"{r.case_id} · {r.format}{'' if r.replicate is None else f' · r{r.replicate}'} "
                     f"({r.status or 'no status'})"
                     for r in rows if r.protocol == "consilium" and not (r.completed and r.trace)]
    return Cohort(run_dir, manifest, arms, not_completed)


def read_judgement(path: Path) -> Judgement | None:
    """The judgement at ``path`` (read as every reader reads one: consilium.judges.record); None when there is
    none; a file that is not one is a user error."""
    if not path.is_file():
        return None
    return record.read_judgement(path)
