"""Each API function's options as one frozen dataclass, given whole or as keywords (docs/api.md).

``consilium.compare(run_dir, bootstrap=50)`` and ``consilium.compare(run_dir, CompareOptions(bootstrap=50))``
are one call: the keywords change the given options (default: the dataclass's defaults). The command line
builds the options from its flags and calls the same function.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, TypeVar

from consilium.errors import UserError

__all__ = ["as_path", "draws", "options_of"]

Opts = TypeVar("Opts")


def options_of(kind: type[Opts], given: Opts | None, changes: dict[str, Any]) -> Opts:
    """``given`` (default ``kind()``) with ``changes``; a keyword that is no option of ``kind`` is a UserError."""
    if given is not None and not isinstance(given, kind):
        raise UserError(f"options: a {type(given).__name__}, not a {kind.__name__}")
    names = [field.name for field in dataclasses.fields(kind)]  # type: ignore[arg-type]
    unknown = [name for name in changes if name not in names]
    if unknown:
        raise UserError(f"{unknown[0]}: not an option ({kind.__name__} has {', '.join(names)})")
    if given is None:
        return kind(**changes)
    return dataclasses.replace(given, **changes) if changes else given  # type: ignore[type-var]


def draws(bootstrap: object) -> int:
    """``bootstrap`` checked as ``--bootstrap`` is: a whole number of draws, at least 1."""
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
        raise UserError(f"bootstrap: must be a positive whole number of draws, got {bootstrap!r}")
    return bootstrap


def as_path(value: str | Path | None) -> Path | None:
    return Path(value) if value is not None else None
