"""A cohort's cases: a folder of case files, one case file or an AgentClinic-style JSONL file, or a glob
pattern (``cases/*.yaml``, ``data/**/*.jsonl``) naming several files, taken in sorted order."""

from __future__ import annotations

import glob
from pathlib import Path

from consilium.cases import Case, case_files, load_case
from consilium.cases.agentclinic import read_agentclinic
from consilium.errors import UserError
from consilium.protocols.board.run import slide_images
from consilium.protocols.registry import get_protocol

__all__ = ["case_places", "cases_exist", "cohort_images", "glob_files", "load_cohort", "load_cohort_files"]


def glob_files(source: Path) -> list[Path] | None:
    """The files a glob pattern matches, sorted; None when ``source`` is not a pattern (or names a real path)."""
    text = str(source)
    if source.exists() or not any(ch in text for ch in "*?["):
        return None
    return sorted(p for p in (Path(m) for m in glob.glob(text, recursive=True)) if p.is_file())


def cases_exist(source: Path) -> bool:
    """Whether ``source`` is a path that exists, or a pattern matching at least one file."""
    files = glob_files(source)
    return source.exists() if files is None else bool(files)


def load_cohort(source: Path) -> list[Case]:
    """Cases from a folder of case files or an AgentClinic-style JSONL file; ids must be unique."""
    return [case for case, _ in load_cohort_files(source)]


def load_cohort_files(source: Path) -> list[tuple[Case, Path | None]]:
    """:func:`load_cohort`, each case with the file it came from (None for a JSONL line), against whose
    folder its slide images resolve."""
    found: list[tuple[Case, Path | None]]
    files = glob_files(source)
    if files is not None:
        found = [pair for file in files for pair in _one_file(file)]
    elif source.is_dir():
        found = [(load_case(p), p) for p in case_files(source)]
    elif source.is_file():
        found = _one_file(source)
    else:
        raise UserError(f"{source}: --cases must be a folder of case files, a .jsonl file or a glob pattern")
    cases = [case for case, _ in found]
    if not cases:
        raise UserError(f"{source}: no cases found")
    ids = [c.id for c in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UserError(f"{source}: duplicate case ids: {', '.join(repeated[:5])}")
    return found


def _one_file(source: Path) -> list[tuple[Case, Path | None]]:
    if source.suffix == ".jsonl":
        return [(case, None) for case in read_agentclinic(source)]
    return [(load_case(source), source)]


def case_places(source: Path, cases: list[Case]) -> list[tuple[str, Case]]:
    """Each case with the file it came from, for an error that names it."""
    if glob_files(source) is not None:
        return [(f"{source} (case {c.id})", c) for c in cases]
    if source.is_dir():
        return list(zip([str(p) for p in case_files(source)], cases, strict=False))
    return [(f"{source} (case {c.id})" if source.suffix == ".jsonl" else str(source), c) for c in cases]


def cohort_images(protocols: list[str], found: list[tuple[Case, Path | None]]) -> dict[str, tuple[str, ...]]:
    """Each case's slide images, when a protocol of the cohort shows them (the board), resolved against its
    file's folder as `board --case` resolves them, so a cohort's vision models see the slides too
    (opentumorboard.txt App. B.1 L160); a JSONL case has no folder and no images."""
    if not any(get_protocol(name).uses_slides for name in protocols):
        return {}
    return {case.id: slide_images(case, file) for case, file in found if file is not None and case.slides}
