"""The library's case files: check them (``validate_cases``: every problem as ``file: field.path: reason``) and
import external collections (``import_agentclinic``, ``import_table``), what ``consilium cases validate`` and
``cases import`` do (docs/cases.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from consilium.api.options import options_of
from consilium.api.sync import off_loop, sync_twin
from consilium.cases import CaseProblem, case_files, load_case, validate_case_file

__all__ = ["CaseCheck", "ImportOptions", "aimport_agentclinic", "aimport_opentumorboard", "aimport_table",
           "avalidate_cases", "collect_case_files", "import_agentclinic", "import_opentumorboard", "import_table",
           "validate_cases"]


@dataclass(frozen=True)
class CaseCheck:
    """Files checked, files invalid, and every problem found, in order (an invalid file may have several)."""

    checked: int
    invalid: int
    problems: list[CaseProblem] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.invalid == 0


async def avalidate_cases(paths: Sequence[str | Path]) -> CaseCheck:
    """Check every case file named or found under ``paths`` (folders searched as ``cohort --cases`` reads them);
    a missing path, a folder with no case file and two files with one case id are problems too."""
    return await off_loop(_validate, [Path(p) for p in paths])


def _validate(paths: list[Path]) -> CaseCheck:
    problems: list[CaseProblem] = []
    checked = invalid = 0
    seen_ids: dict[str, str] = {}
    for path in paths:
        files, missing = collect_case_files(path)
        if missing is not None:
            checked += 1
            invalid += 1
            problems.append(missing)
            continue
        for file in files:
            checked += 1
            found = validate_case_file(file) or _duplicate_id(file, seen_ids)
            if found:
                invalid += 1
                problems.extend(found)
    return CaseCheck(checked=checked, invalid=invalid, problems=problems)


validate_cases = sync_twin(avalidate_cases)


def collect_case_files(path: Path) -> tuple[list[Path], CaseProblem | None]:
    """The case files a PATH stands for: a directory's are :func:`~consilium.cases.case_files`'s.

    A path that does not exist, or a directory without case files, is returned as a problem.
    """
    if path.is_dir():
        files = case_files(path)
        if not files:
            return [], CaseProblem(str(path), "", "no case files (*.json, *.yaml, *.yml) in this directory")
        return files, None
    if path.exists() or path.is_symlink():
        return [path], None
    return [], CaseProblem(str(path), "", "no such file or directory")


def _duplicate_id(file: Path, seen_ids: dict[str, str]) -> list[CaseProblem]:
    """Two files with the same case id would overwrite each other's run outputs."""
    case_id = load_case(file).id
    if case_id in seen_ids:
        return [CaseProblem(str(file), "id", f"case id {case_id!r} is also used by {seen_ids[case_id]}")]
    seen_ids[case_id] = str(file)
    return []


@dataclass(frozen=True)
class ImportOptions:
    """``cases import``'s options: the folder for the case files, their format, and whether to overwrite case
    files of the same ids there (without it an import into a folder that has one is refused, nothing written)."""

    out: Path = Path(".")
    fmt: Literal["json", "yaml"] = "json"
    force: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", Path(self.out))


async def aimport_agentclinic(file: str | Path, options: ImportOptions | None = None,
                              **changes: Any) -> list[Path]:
    """AgentClinic OSCE JSONL (one vignette per line) → one diagnostic case file each; a malformed line stops
    the import before anything is written. Returns the files written."""
    from consilium.cases import import_agentclinic as convert

    chosen = options_of(ImportOptions, options, changes)
    return await off_loop(convert, file, chosen.out, fmt=chosen.fmt, force=chosen.force)


import_agentclinic = sync_twin(aimport_agentclinic)


async def aimport_table(file: str | Path, mapping: str | Path, options: ImportOptions | None = None,
                        **changes: Any) -> Any:
    """A JSON, JSONL or CSV table → one case file per good record, mapped as ``mapping`` says (docs/cases.md):
    the result's ``written``, ``problems`` (records that failed, not written) and ``notes`` (records written
    without a mapped source)."""
    from consilium.cases.table_import import import_table as convert

    chosen = options_of(ImportOptions, options, changes)
    return await off_loop(convert, file, mapping, chosen.out, fmt=chosen.fmt, force=chosen.force)


import_table = sync_twin(aimport_table)


async def aimport_opentumorboard(source: str | Path, options: ImportOptions | None = None, *,
                                 slides: str | Path | None = None, **changes: Any) -> list[Path]:
    """OpenTumorBoard's released data (a ``data/`` folder or one file: task1, task2, the test_inputs manifests,
    gzip or not) → one tumor-board case file per recorded case (docs/opentumorboard.md); ``slides``: the
    folder the image manifests' slide paths are relative to. A bad line stops the import before anything is
    written. Returns the files written."""
    from consilium.cases.opentumorboard import read_opentumorboard
    from consilium.cases.writing import write_cases

    chosen = options_of(ImportOptions, options, changes)
    cases = await off_loop(read_opentumorboard, Path(source), Path(slides) if slides is not None else None)
    return await off_loop(write_cases, cases, chosen.out, chosen.fmt, force=chosen.force)


import_opentumorboard = sync_twin(aimport_opentumorboard)
