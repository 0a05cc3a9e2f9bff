"""A cohort's cases: a folder of case files, one case file or an AgentClinic-style JSONL file."""

from __future__ import annotations

from pathlib import Path

from consilium.cases import Case, case_files, load_case
from consilium.cases.agentclinic import read_agentclinic
from consilium.errors import UserError
from consilium.protocols.board.run import slide_images
from consilium.protocols.registry import get_protocol

__all__ = ["case_places", "cohort_images", "load_cohort", "load_cohort_files"]


def load_cohort(source: Path) -> list[Case]:
    """Cases from a folder of case files or an AgentClinic-style JSONL file; ids must be unique."""
    return [case for case, _ in load_cohort_files(source)]


def load_cohort_files(source: Path) -> list[tuple[Case, Path | None]]:
    """:func:`load_cohort`, each case with the file it came from (None for a JSONL line), against whose
    folder its slide images resolve."""
    found: list[tuple[Case, Path | None]]
    if source.is_dir():
        found = [(load_case(p), p) for p in case_files(source)]
    elif source.suffix == ".jsonl":
        found = [(case, None) for case in read_agentclinic(source)]
    elif source.is_file():
        found = [(load_case(source), source)]
    else:
        raise UserError(f"{source}: --cases must be a folder of case files or a .jsonl file")
    cases = [case for case, _ in found]
    if not cases:
        raise UserError(f"{source}: no cases found")
    ids = [c.id for c in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UserError(f"{source}: duplicate case ids: {', '.join(repeated[:5])}")
    return found


def case_places(source: Path, cases: list[Case]) -> list[tuple[str, Case]]:
    """Each case with the file it came from, for an error that names it."""
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
