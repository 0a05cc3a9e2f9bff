"""What a run folder may replace: a file of the kind it writes there, never another.

A run folder's writer replaces a table or a record only when the file in its place is a plain file
that reads as one of its own kind (a trace, a judgement record, a table whose header starts with
``case_id``); a symbolic link, a folder, or a file of anything else (a user's notes saved as
``arms.csv``) is refused with one line naming it, and nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from consilium.errors import UserError

__all__ = ["Kind", "check_ours"]

Kind = Literal["trace", "judgement", "table", "manifest"]
_HEAD = 65536  # bytes read to recognise a table's header


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _is_kind(path: Path, kind: Kind) -> bool:
    if kind == "table":
        try:
            with path.open("rb") as handle:
                head = handle.read(_HEAD)
        except OSError:
            return False
        return head.startswith(b"case_id,") or head.rstrip(b"\r\n") == b"case_id"
    data = _json(path)
    if not isinstance(data, dict):
        return False
    if kind == "judgement":
        return data.get("kind") == "judgement"
    if kind == "trace":
        return isinstance(data.get("run_id"), str) and "schema_version" in data and isinstance(data.get("calls"), list)
    return isinstance(data.get("run_id"), str)  # a manifest


def check_ours(path: Path, kind: Kind) -> None:
    """Refuse to replace ``path`` unless it is absent or a plain file of ``kind`` (:class:`UserError`)."""
    if path.is_symlink():
        raise UserError(f"{path}: is a symbolic link; a run folder replaces only its own plain files "
                        "(nothing was written)")
    if not path.exists():
        return
    if not path.is_file() or not _is_kind(path, kind):
        raise UserError(f"{path}: exists and is not a {kind} this run folder wrote; it is left alone "
                        "(nothing was written)")
