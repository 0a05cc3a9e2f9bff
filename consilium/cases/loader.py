"""Read case files (.json, .yaml, .yml) into :class:`~consilium.cases.model.Case`, and write them.

Every problem is reported as ``<file>: <field.path>: <reason>`` so a user can
fix it without a traceback: :func:`load_case` raises the first one as a
:class:`~consilium.errors.UserError`, :func:`validate_case_file` returns all.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from consilium.cases.model import Case
from consilium.datafiles import DataError, parse_data
from consilium.errors import UserError
from consilium.fileio import write_json_atomic, write_text_atomic
from consilium.natural import natural_key

__all__ = [
    "CASE_SUFFIXES",
    "CaseProblem",
    "case_files",
    "case_to_yaml",
    "load_case",
    "problems_from_validation",
    "save_case",
    "validate_case_file",
]

CASE_SUFFIXES = (".json", ".yaml", ".yml")


@dataclass(frozen=True)
class CaseProblem:
    """One thing wrong with a case file; ``field`` is a dotted path, empty for whole-file problems."""

    file: str
    field: str
    reason: str

    def __str__(self) -> str:
        if self.field:
            return f"{self.file}: {self.field}: {self.reason}"
        return f"{self.file}: {self.reason}"


#: A case is clinical text, not a data dump; a bigger file is a mistake (and would be slow to parse).
MAX_CASE_BYTES = 5_000_000


def _is_case_file_name(name: str) -> bool:
    """Whether a directory entry named ``name`` is a case file: a case suffix in any letter case, not hidden.

    Hidden names (``.draft.yaml``, an editor's ``.#case.yaml`` lock) are skipped, like hidden folders.
    """
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in CASE_SUFFIXES


def case_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The case files in ``folder`` and its subfolders, in natural order (``mac-2`` before ``mac-10``, as a
    person reads the folder; consilium/natural.py); the one rule every command uses.

    Hidden files and folders are skipped and symlinked folders are not followed; a broken link with a
    case name is kept, so loading it reports the problem instead of the file silently going missing,
    and an unreadable subfolder is a :class:`UserError` rather than a gap in the cohort.
    """
    found = []
    for current, dirs, names in os.walk(Path(folder), onerror=_unreadable_folder):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in names:
            path = Path(current) / name
            if _is_case_file_name(name) and (path.is_file() or not path.exists()):
                found.append(path)
    return sorted(found, key=lambda path: natural_key(str(path)))


def _unreadable_folder(exc: OSError) -> None:
    raise UserError(f"{exc.filename}: cannot read the folder ({exc.strerror or exc})")


def load_case(path: str | os.PathLike[str]) -> Case:
    """Load and validate one case file, raising a one-line :class:`UserError` on the first problem."""
    case, problems = _load(Path(path))
    if problems:
        raise UserError(str(problems[0]))
    assert case is not None
    return case


def validate_case_file(path: str | os.PathLike[str]) -> list[CaseProblem]:
    """Every problem of one case file; an empty list means the file is a valid case."""
    return _load(Path(path))[1]


def save_case(case: Case, path: str | os.PathLike[str]) -> Path:
    """Write a case atomically as JSON or YAML (chosen by the suffix); unset optional fields are left out."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in CASE_SUFFIXES:
        raise UserError(f"{target}: unsupported file type {suffix or '(no extension)'!r}; use .json, .yaml or .yml")
    if suffix == ".json":
        return write_json_atomic(target, case.model_dump(mode="json", exclude_none=True))
    return write_text_atomic(target, case_to_yaml(case))


class _BlockDumper(yaml.SafeDumper):
    """Safe YAML dumper that writes multi-line strings as ``|`` blocks, readable in a case file."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _represent_str)


def case_to_yaml(case: Case) -> str:
    """The case as YAML text, fields in model order, unset optional fields left out."""
    data = case.model_dump(mode="json", exclude_none=True)
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def problems_from_validation(file: str, error: ValidationError) -> list[CaseProblem]:
    """Turn pydantic's errors into problems with dotted field paths like ``reference.rubric.2.weight``."""
    problems = []
    for detail in error.errors(include_url=False):
        field = ".".join(str(part) for part in detail["loc"])
        problems.append(CaseProblem(file, field, _reason(detail["type"], detail["msg"], detail.get("input"))))
    return problems


#: pydantic's error types for a value that should have been a mapping of fields; its message names the
#: model's class (``instance of ClinicalSections``), which means nothing to whoever wrote the file.
_NOT_A_MAPPING = ("model_type", "model_attributes_type", "dict_type")


def _reason(kind: str, message: str, given: Any = None) -> str:
    if kind == "extra_forbidden":
        return "unknown field (not part of the case format; check the spelling)"
    if kind == "missing":
        return "required field is missing"
    if kind in _NOT_A_MAPPING:
        return f"must be a mapping of fields, not {_kind(given)}"
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def _load(path: Path) -> tuple[Case | None, list[CaseProblem]]:
    file = str(path)
    suffix = path.suffix.lower()
    if suffix not in CASE_SUFFIXES:
        reason = f"unsupported file type {suffix or '(no extension)'!r}; use .json, .yaml or .yml"
        return None, [CaseProblem(file, "", reason)]
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return None, [CaseProblem(file, "", "not a regular file")]
        size = info.st_size
        if size > MAX_CASE_BYTES:
            return None, [CaseProblem(file, "", f"file is {size / 1e6:.0f} MB; a case file may hold at most "
                                                f"{MAX_CASE_BYTES / 1e6:.0f} MB")]
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [CaseProblem(file, "", "no such file")]
    except UnicodeDecodeError as exc:
        return None, [CaseProblem(file, "", f"not UTF-8 text (byte {exc.start})")]
    except OSError as exc:
        return None, [CaseProblem(file, "", f"cannot read file: {exc.strerror or exc}")]
    try:
        data = parse_data(text, json_format=suffix == ".json")
    except DataError as exc:
        return None, [CaseProblem(file, exc.field, exc.reason)]
    if data is None:
        return None, [CaseProblem(file, "", "file is empty")]
    if not isinstance(data, dict):
        return None, [CaseProblem(file, "", f"top level must be a mapping of case fields, not {_kind(data)}")]
    try:
        return Case.model_validate(data), []
    except ValidationError as exc:
        return None, problems_from_validation(file, exc)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"
