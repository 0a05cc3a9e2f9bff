"""The run folder: the only code that knows where a run's files lie and what they are called.

:class:`RunFolder` opens a run's folder and reads and writes its arms, traces, judgement records, tables
and manifest (docs/cohorts.md, "Run folder"); :mod:`.layout` names its files, :mod:`.rows` types its tables'
rows, :mod:`.frames` makes pandas frames of them. The names below load on first use, so a module that needs
only the layout (a cohort placing its traces) does not load the judges' record reader with it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from consilium.runfolder.folder import RunFolder
    from consilium.runfolder.rows import ArmRow, JudgementRow

__all__ = ["ArmRow", "JudgementRow", "RunFolder"]
_WHERE = {"RunFolder": "consilium.runfolder.folder", "ArmRow": "consilium.runfolder.rows",
          "JudgementRow": "consilium.runfolder.rows"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
