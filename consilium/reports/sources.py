"""What ``consilium report`` reads: the cohort folders under RUN_DIR (RUN_DIR itself when it holds an
``arms.csv``, else each folder in it that does), and each cohort's arms split by protocol, so that a
folder of several cohorts, or an ``arms.csv`` holding arms of several protocols, reports every part; each
with how much of its manifest's plan it holds (consilium/cohort/completeness.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from consilium.cohort.completeness import Completeness
from consilium.errors import UserError
from consilium.reports.compare import CohortData, load_cohort_data, protocols_of, read_arms
from consilium.reports.partial import completeness_of
from consilium.runfolder.folder import RunFolder

__all__ = ["CohortPart", "cohort_folders", "cohort_parts"]


@dataclass
class CohortPart:
    """The arms of one protocol in one cohort folder, loaded as the consilium tables read them."""

    name: str  # the cohort folder's name
    folder: Path
    protocol: str  # "consilium", "board", "single", … (its arms' ``protocol``)
    data: CohortData
    done: Completeness | None = None  # the cohort folder against its manifest's plan; None: no manifest


def cohort_folders(run_dir: Path) -> list[Path]:
    if RunFolder(run_dir).is_cohort:
        return [run_dir]
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such folder")
    found = sorted(p for p in run_dir.iterdir() if p.is_dir() and RunFolder(p).is_cohort)
    if not found:
        raise UserError(f"{run_dir}: no arms.csv, and no cohort folder with one in it (run `consilium cohort` first)")
    return found


def cohort_parts(run_dir: Path) -> list[CohortPart]:
    """Every (cohort, protocol) part under RUN_DIR, each loaded and checked before anything is written."""
    parts = []
    for folder in cohort_folders(run_dir):
        done = completeness_of(folder)  # first: a cohort with no arm yet says so, with its plan
        for protocol in sorted(protocols_of(read_arms(folder, check=False))):
            parts.append(CohortPart(folder.name, folder, protocol, load_cohort_data(folder, protocol=protocol),
                                    done))
    return parts
