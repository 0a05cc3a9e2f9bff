"""A run folder's own files: its traces and judgement records, never those of a run nested inside it.

A cohort's folder holds other runs: ``consilium ablate`` writes its counterfactual arms under
``RUN_DIR/ablate/``, and ``--out`` may put a run anywhere. A command given a run folder (``judge``, ``jury``,
``calibrate``, ``view``, ``replay``, the reports) reads that run's arms only: below a run folder it does not
descend into a folder that is itself a run (one holding a :data:`RUN_MARKERS` file) or into ``ablate/``.
A folder that is not a run (``runs/``, holding several) is searched through, each run in it on its own terms.
"""

from __future__ import annotations

import glob
import os
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = ["ABLATIONS", "ABLATION_RECORD", "RUN_MARKERS", "judgement_files", "own_files", "trace_files"]

#: The record at the top of an ablation's folder (consilium/ablation/report.py).
ABLATION_RECORD = "ablation.json"
#: Files that make a folder a run of its own: a cohort's or a single run's manifest, an ablation's record.
RUN_MARKERS = ("manifest.json", ABLATION_RECORD)
#: Where ``consilium ablate`` puts a cohort's ablations by default.
ABLATIONS = "ablate"


def _is_run(folder: Path) -> bool:
    return any((folder / marker).is_file() for marker in RUN_MARKERS)


def own_files(folder: Path, pattern: str) -> list[Path]:
    """The files under ``folder`` whose name matches ``pattern`` (case-sensitive), sorted, leaving out every
    folder nested in a run below it (a run, or ``ablate/``); symlinked folders are not followed."""
    found: list[Path] = []
    inside = {folder: _is_run(folder)}  # folder → whether it is in a run (itself or one above it, from ``folder``)
    for top, dirs, files in os.walk(folder):
        here = Path(top)
        in_run = inside[here]
        kept = []
        for name in sorted(dirs):
            child = here / name
            nested_run = _is_run(child)
            if in_run and (nested_run or name == ABLATIONS):
                continue
            inside[child] = in_run or nested_run
            kept.append(name)
        dirs[:] = kept
        found += [here / name for name in files if fnmatchcase(name, pattern) and (here / name).is_file()]
    return sorted(found)


def trace_files(folder: Path) -> list[Path]:
    """The run's own ``*.trace.json`` files (:func:`own_files`)."""
    return own_files(folder, "*.trace.json")


def judgement_files(folder: Path, rubric: str | None = None) -> list[Path]:
    """The run's own judgement records (``*.judge.<rubric>.json``; every rubric's when ``rubric`` is None)."""
    pattern = f"*.judge.{glob.escape(rubric) if rubric else '*'}.json"
    return [p for p in own_files(folder, pattern) if not p.name.endswith(".trace.json")]
