"""The analysis folder's stamp, ``analysis.json`` (docs/networks.md, "Files"): which run, decision method,
judge and rubric version its files are of, and which files ``analyze`` wrote. A later ``analyze`` replaces
the folder's files only when its stamp matches (the same analysis, made again); another run's or another
method's analysis is refused in one line unless ``--force``, so that no folder mixes the tables of one
analysis with the judgement records of another."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from consilium.errors import UserError
from consilium.fileio import in_the_way, write_text_atomic

__all__ = ["STAMP", "check_out", "check_stamp", "stamp_of", "write_stamp"]

STAMP = "analysis.json"


def check_out(run_dir: Path, out: Path) -> None:
    """``--out`` may not be the run folder or a folder above it: the analysis would sit among the traces."""
    run, target = run_dir.resolve(), out.resolve()
    if target == run or target in run.parents:
        raise UserError(f"--out: {out} is the run folder or a folder above it; give a folder of its own (default "
                        f"{run_dir / 'analysis'})")


def stamp_of(run_dir: Path, judge_model: str | None, rubric_version: int | None) -> dict[str, Any]:
    """What identifies an analysis: the run (its folder's name, the run id), the method, the judge's model
    id and the uptake rubric's version (both null for word overlap)."""
    return {"kind": "analysis", "run_id": run_dir.resolve().name,
            "method": "judge" if judge_model else "word_overlap", "judge_model": judge_model,
            "rubric_version": rubric_version if judge_model else None}


def _describe(stamp: Mapping[str, Any]) -> str:
    how = (f"judge {stamp.get('judge_model')} (rubric v{stamp.get('rubric_version')})" if stamp.get("judge_model")
           else "word overlap")
    return f"run {stamp.get('run_id')} by {how}"


def _read(out: Path) -> dict[str, Any] | None:
    """The folder's stamp, None when it has none; a ValueError or TypeError when it is no stamp."""
    path = out / STAMP
    if not path.is_file():
        return None
    stamp = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(stamp, dict) or not isinstance(stamp.get("files", []), list):
        raise TypeError(f"not an object with a list of files: {str(stamp)[:80]}")
    return stamp


def check_stamp(out: Path, stamp: dict[str, Any], force: bool) -> list[Path]:
    """The files the folder's earlier analysis wrote (to remove those this one does not write again); a
    folder with another analysis, or with files and no stamp or an unreadable one, is refused unless
    ``force`` (:func:`consilium.fileio.in_the_way`: the stamp is the folder's mark, every key of an
    analysis's identity in it)."""
    path = out / STAMP

    def mark(folder: Path) -> dict[str, Any] | None:
        old = _read(folder)
        return None if old is None else {key: old.get(key) for key in stamp}

    for found in [] if force else in_the_way([out], stamp, mark, folder=True):
        if found.why == "unmarked":
            raise UserError(f"{out}: not empty and not an analysis folder (no {STAMP}); give --out another "
                            "folder, or --force to write into it")
        if found.why == "unreadable":
            raise UserError(f"{path}: unreadable ({found.error}); --force replaces it")
        raise UserError(f"{path}: the analysis there is of {_describe(found.mark or {})}, not {_describe(stamp)}, "
                        "and is never overwritten: give --out another folder, or --force to replace it")
    try:
        old = _read(out)
    except (OSError, ValueError, TypeError):  # replaced by force: its files are not known
        return []
    return [] if old is None else [out / str(f) for f in old.get("files", [])]


def write_stamp(out: Path, stamp: dict[str, Any], files: list[Path], previous: list[Path]) -> Path:
    """Write the stamp naming ``files``; remove the earlier analysis's files that this one did not write."""
    files = [*files, *(f.with_suffix(".pdf") for f in files if f.suffix == ".png" and f.with_suffix(".pdf").is_file())]
    written = {f.resolve() for f in files}
    for old in previous:
        if old.resolve() not in written and old.is_file() and out.resolve() in old.resolve().parents:
            old.unlink()
    names = sorted(f.resolve().relative_to(out.resolve()).as_posix() for f in files)
    return write_text_atomic(out / STAMP, json.dumps({**stamp, "files": names}, indent=2) + "\n")
