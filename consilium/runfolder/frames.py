"""A run folder as pandas frames: its arms, its model calls and its judge items, one row each.

pandas is imported here, when a frame is asked for, never when the package loads (``consilium --help``
starts without it); without it, asking for a frame is one line naming the extra. Columns are the rows'
own (:mod:`.rows`, :mod:`.records`), typed: counts are integers, an unknown value is missing, a flag a bool.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from consilium.errors import UserError
from consilium.runfolder.records import CALL_COLUMNS, Folder, call_rows
from consilium.runfolder.rows import ArmRow, JudgementRow

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["arms_frame", "calls_frame", "judgements_frame"]


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...] = ()) -> pd.DataFrame:
    try:
        pandas = importlib.import_module("pandas")
    except ImportError:
        raise UserError("a run folder's frames need pandas (not installed): pip install 'consilium[analysis]'") \
            from None
    names = list(columns)
    for row in rows:
        names += [k for k in row if k not in names]
    frame: pd.DataFrame = pandas.DataFrame.from_records(rows, columns=names)
    return frame


def arms_frame(folder: Folder) -> pd.DataFrame:
    """One row per arm of ``arms.csv``, a failed one included (its status ``failed``, its error kept)."""
    return _frame([r.cells() for r in folder.arms()], tuple(ArmRow.model_fields))


def calls_frame(folder: Folder) -> pd.DataFrame:
    """One row per model call (:func:`.records.call_rows`)."""
    return _frame(call_rows(folder), CALL_COLUMNS)


def judgements_frame(folder: Folder) -> pd.DataFrame:
    """One row per judge item (:meth:`RunFolder.judgement_rows`): a not-evaluable item is a row whose
    ``not_evaluable`` is True and whose score is missing."""
    return _frame([r.cells() for r in folder.judgement_rows()], tuple(JudgementRow.model_fields))
