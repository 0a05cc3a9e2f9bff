"""A run folder's layout: the names of its files and where each lies, known here and nowhere else.

A run folder (a cohort's, a ``simulate`` / ``board`` run's, an ablation's) holds::

    manifest.json                      what was run, with which settings (a cohort's: consilium/spec/manifest.py)
    arms.csv                           a cohort's table: one row per arm, a failed arm included
    arms.jsonl                         a cohort's progress log and resume index (consilium/cohort/index.py)
    judgements.csv                     a judged cohort's table: one row per judge item
    arms/<model>/<xx>/<case>.<variant>[.r<replicate>].trace.json     each arm's trace
    arms/<model>/<xx>/<case>.<variant>[.r<replicate>].judge.<rubric>.json   its judgement by a rubric
    arms/<model>/<xx>/<case>.<variant>[.r<replicate>].otb-reward.json       a board's reward record
    ablate/                            ``consilium ablate``'s runs, each a run folder of its own

A folder holding a :data:`RUN_MARKERS` file is a run; a command given a run reads its own files only,
never a run nested in it (an ablation under ``ablate/``, a run put in it with ``--out``); a folder that is
not a run (``runs/``) is searched through, each run in it on its own terms.

This module imports nothing of the package: it is the lowest layer's (tests/project/test_layers.py), so the
writers below the run folder's own layer (the single-run writer in consilium/traces/io.py, the board's reward
record, the cohort manifest's model) place their files by these names instead of spelling them.
"""

from __future__ import annotations

import glob
import os
from fnmatch import fnmatchcase
from pathlib import Path, PurePath

__all__ = ["ABLATIONS", "ABLATION_RECORD", "ARMS_CSV", "ARMS_JSONL", "JUDGEMENTS_CSV", "MANIFEST", "RUN_MARKERS",
           "TRACE_SUFFIX", "board_reward_path", "is_trace", "judged_rubric", "judgement_files", "judgement_path",
           "judgements_of", "own_files", "trace_files", "trace_glob", "trace_name", "trace_of_judgement",
           "trace_stem"]

#: A run's manifest: a cohort's (consilium/spec/manifest.py) or a single run's (consilium/traces/io.py).
MANIFEST = "manifest.json"
ARMS_CSV = "arms.csv"
ARMS_JSONL = "arms.jsonl"
JUDGEMENTS_CSV = "judgements.csv"
TRACE_SUFFIX = ".trace.json"
_JUDGEMENT = ".judge."  # <trace stem>.judge.<rubric>.json
_JSON = ".json"
_BOARD_REWARD = ".otb-reward.json"  # <trace stem>.otb-reward.json
#: The record at the top of an ablation's folder (consilium/ablation/report.py).
ABLATION_RECORD = "ablation.json"
#: Files that make a folder a run of its own: a cohort's or a single run's manifest, an ablation's record.
RUN_MARKERS = (MANIFEST, ABLATION_RECORD)
#: Where ``consilium ablate`` puts a cohort's ablations by default.
ABLATIONS = "ablate"


def trace_name(case_id: str, variant: str) -> str:
    """A trace's file name: ``<case>.<variant>.trace.json`` (``variant`` may carry a replicate's ``.r2``)."""
    return f"{case_id}.{variant}{TRACE_SUFFIX}"


def trace_glob(variant: str) -> str:
    """The pattern of every trace of ``variant`` in a folder (``*.free-form.trace.json``)."""
    return trace_name("*", variant)


def is_trace(path: str | Path) -> bool:
    return Path(path).name.endswith(TRACE_SUFFIX)


def trace_stem(path: str | PurePath) -> str:
    """A trace's name without its suffix (``k1.free-form``), or a relative path's, as text."""
    return str(path).removesuffix(TRACE_SUFFIX)


def judgement_path(trace: Path, rubric: str) -> Path:
    """Where the judgement of ``trace`` by ``rubric`` lies: beside it, ``<stem>.judge.<rubric>.json``."""
    return trace.with_name(f"{trace_stem(trace.name)}{_JUDGEMENT}{rubric}{_JSON}")


def board_reward_path(trace: Path) -> Path:
    """Where a board's reward record lies: beside its trace, ``<stem>.otb-reward.json``."""
    return trace.with_name(f"{trace_stem(trace.name)}{_BOARD_REWARD}")


def trace_of_judgement(judgement: str, rubric: str) -> str:
    """The trace a judgement file (a name or a relative path) is of, named the same way."""
    return judgement.removesuffix(f"{_JUDGEMENT}{rubric}{_JSON}") + TRACE_SUFFIX


def judged_rubric(trace: str | PurePath, name: str) -> str | None:
    """The rubric whose judgement of ``trace`` a file named ``name`` is (``<stem>.judge.<rubric>.json``), else
    None: for a reader that lists a folder once instead of globbing per trace."""
    prefix = f"{trace_stem(PurePath(trace).name)}{_JUDGEMENT}"
    if name.startswith(prefix) and name.endswith(_JSON) and len(name) > len(prefix) + len(_JSON):
        return name[len(prefix):-len(_JSON)]
    return None


def judgements_of(trace: Path) -> list[Path]:
    """Every rubric's judgement of ``trace`` beside it, sorted."""
    return sorted(trace.parent.glob(f"{glob.escape(trace_stem(trace.name))}{_JUDGEMENT}*{_JSON}"))


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
    return own_files(folder, f"*{TRACE_SUFFIX}")


def judgement_files(folder: Path, rubric: str | None = None) -> list[Path]:
    """The run's own judgement records (``*.judge.<rubric>.json``; every rubric's when ``rubric`` is None)."""
    pattern = f"*{_JUDGEMENT}{glob.escape(rubric) if rubric else '*'}{_JSON}"
    return [p for p in own_files(folder, pattern) if not is_trace(p)]
