"""A cohort's cases: a folder of case files, one case file or an AgentClinic-style JSONL file, or a glob
pattern (``cases/*.yaml``, ``data/**/*.jsonl``) naming several files, taken in natural order (``mac-2``
before ``mac-10``; a JSONL file's lines in their order); the first N of them (``--limit``) or a seeded
random sample (``--sample``); and the check that every case has the reference its judges score against."""

from __future__ import annotations

import glob
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from consilium.cases import Case, case_files, load_case
from consilium.cases.agentclinic import read_agentclinic
from consilium.errors import UserError
from consilium.graphs.board.slides import slide_images
from consilium.graphs.registry import get_protocol
from consilium.judges.rubric import Rubric
from consilium.natural import natural_key

__all__ = ["case_places", "cases_exist", "check_references", "cohort_images", "glob_files", "load_cohort",
           "load_cohort_files", "missing_reference", "select_cases"]

T = TypeVar("T")

#: A rubric's ``reference`` (its data: consilium/judges/rubrics/*.yaml) → the case field it is read from
#: (as consilium/judges/runner.py ``reference_for`` and components.py ``turn_reference`` read it).
REFERENCE_FIELDS = {"diagnosis": "reference.diagnosis", "conclusion": "reference.conclusion",
                    "decisions": "reference.conclusion", "case_criteria": "reference.rubric",
                    "answer": "reference.answers"}


def glob_files(source: Path) -> list[Path] | None:
    """The files a glob pattern matches, sorted; None when ``source`` is not a pattern (or names a real path)."""
    text = str(source)
    if source.exists() or not any(ch in text for ch in "*?["):
        return None
    return sorted((p for p in (Path(m) for m in glob.glob(text, recursive=True)) if p.is_file()),
                  key=lambda path: natural_key(str(path)))


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


def select_cases(found: Sequence[T], *, limit: int | None, sample: int | None, seed: int) -> list[T]:
    """The cases a cohort runs: all, the first ``limit`` (in the order above), or ``sample`` of them drawn at
    random with ``seed`` (Python's ``random.Random(seed).sample``: the same seed draws the same cases), kept
    in that order. More than there are is refused for a sample (it would not be one)."""
    if limit is not None and sample is not None:
        raise UserError("--sample: give --limit or --sample, not both")
    if sample is None:
        return list(found[:limit])
    if sample > len(found):
        raise UserError(f"--sample {sample}: there are only {len(found)} cases to sample from")
    chosen = sorted(random.Random(seed).sample(range(len(found)), sample))
    return [found[index] for index in chosen]


def missing_reference(rubric: Rubric, case: Case) -> str | None:
    """The case field a rubric scores against that the case lacks (``reference.diagnosis``), or None.

    Derived from the rubric's own data: its ``reference`` names what it compares with, and its scoring kind
    says whether a case without it is not evaluable (a criterion rubric such as ai-consilium judges the case
    alone, so needs none)."""
    kind = rubric.kind
    field = REFERENCE_FIELDS.get(rubric.reference)
    if field is None or not (kind.needs_reference or kind.criteria_from_case):
        return None
    ref = case.reference
    value = {"reference.diagnosis": ref.diagnosis, "reference.conclusion": ref.conclusion,
             "reference.rubric": ref.rubric, "reference.answers": ref.answers}[field] if ref else None
    empty = value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, list) and not value)
    return field if empty else None


def check_references(rubrics: Iterable[Rubric], cases: Sequence[tuple[str, Case]], *, allow: bool) -> list[str]:
    """Before a judged cohort runs: each rubric's cases that lack what it scores against. Refused in one line
    (the panel would spend its tokens on arms no judge can score), or with ``allow`` returned as one line per
    rubric saying how many, for the caller to print."""
    said = []
    for rubric in rubrics:
        lacking = [(where, field) for where, case in cases if (field := missing_reference(rubric, case))]
        if not lacking:
            continue
        count = f"{len(lacking)} of {len(cases)} case{'' if len(cases) == 1 else 's'}"
        if not allow:
            raise UserError(f"--judge {rubric.name}: {count} lack {lacking[0][1]}, which it scores against "
                            f"(first: {lacking[0][0]}); add it to the cases, or pass --allow-missing-reference "
                            "to run them anyway (their judgements are not evaluable)")
        said.append(f"--allow-missing-reference: {count} lack {lacking[0][1]} ({rubric.name}); their judgements "
                    "will be not evaluable")
    return said
