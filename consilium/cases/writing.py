"""Writing imported cases into a folder: one ``<id>.<fmt>`` file each, never over an earlier import unasked.

Every importer (AgentClinic, tables) writes through :func:`write_cases`, so re-importing into a folder
that already holds a case file of one of the ids is refused before anything is written, unless the
caller forces it; even then a file of the same id in the other format is refused, since the folder
would hold one case twice and a cohort on it would refuse the duplicate id.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from consilium.cases.loader import CASE_SUFFIXES, save_case
from consilium.cases.model import Case
from consilium.errors import UserError

__all__ = ["write_cases"]


def write_cases(cases: Sequence[Case], out: Path, fmt: Literal["json", "yaml"], *, force: bool = False) -> list[Path]:
    """Write each case to ``out/<id>.<fmt>`` and return the paths; a :class:`UserError` before any write when
    a file of one of the ids is there (the same name: unless ``force``; another format: always)."""
    names = {entry.name.casefold(): entry.name for entry in out.iterdir()} if out.is_dir() else {}
    same: list[str] = []
    for case in cases:
        target = f"{case.id}.{fmt}"
        for suffix in CASE_SUFFIXES:
            found = names.get(f"{case.id}{suffix}".casefold())
            if found is None:
                continue
            if found.casefold() == target.casefold():
                same.append(found)
            else:
                raise UserError(f"{out}: already holds {found}, case {case.id!r} in another file; importing it "
                                f"as {target} would put the case in the folder twice (remove {found}, or import "
                                "into another folder)")
    if same and not force:
        more = f" and {len(same) - 1} more case file{'s' if len(same) > 2 else ''}" if len(same) > 1 else ""
        raise UserError(f"{out}: already holds {same[0]}{more} of the ids being imported; nothing was written "
                        "(import into another folder, or pass --force to overwrite them)")
    return [save_case(case, out / f"{case.id}.{fmt}") for case in cases]
