"""What a run folder may replace: a file of the kind it writes there, never another.

The package's one ownership rule (:func:`consilium.fileio.in_the_way`) with the run folder's marks: a
run folder's files carry no mark of their own, so a file's kind is its mark (a trace, a judgement record,
a table whose header starts with ``case_id``, a manifest). A symbolic link, a folder, or a file of
anything else in its place (a user's notes saved as ``arms.csv``) stands in the way: one line naming it,
nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from consilium.errors import UserError
from consilium.fileio import Mark, in_the_way

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

    def read_mark(found: Path) -> Mark | None:
        return {} if _is_kind(found, kind) else None

    for way in in_the_way([path], {}, read_mark):
        if path.is_symlink():
            raise UserError(f"{path}: is a symbolic link; a run folder replaces only its own plain files "
                            "(nothing was written)")
        raise UserError(f"{path}: exists and is not a {kind} this run folder wrote ({way.why}); it is left alone "
                        "(nothing was written)")
