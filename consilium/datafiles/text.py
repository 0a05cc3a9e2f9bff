"""A data file's text, gzip or not: ``NAME.gz`` is decompressed, so every reader takes the files as they
ship (OpenTumorBoard's released ``data/*.jsonl.gz``, a compressed AgentClinic or table export).

Errors are the ones :meth:`pathlib.Path.read_text` raises, so each caller keeps its own message: a
missing file is :class:`FileNotFoundError`, text that is not UTF-8 :class:`UnicodeDecodeError`, and a
damaged or truncated gzip an :class:`OSError` saying so.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from consilium.errors import UserError

__all__ = ["jsonl_objects", "read_text", "unpacked_suffix"]


def read_text(path: Path) -> str:
    if path.suffix.lower() != ".gz":
        return path.read_text(encoding="utf-8")
    try:
        data = gzip.decompress(path.read_bytes())
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise OSError(f"not a complete gzip file ({exc})") from None
    return data.decode("utf-8")


def unpacked_suffix(path: Path) -> str:
    """The suffix that says the format: ``.jsonl`` for ``a.jsonl`` and for ``a.jsonl.gz``."""
    return Path(path.name[:-3]).suffix if path.suffix.lower() == ".gz" else path.suffix


def jsonl_objects(path: Path, what: str) -> list[tuple[str, dict[str, Any]]]:
    """Each non-blank line of a JSONL file (gzip or not) as ``(FILE:LINE, object)``; a file that cannot be read,
    or a line that is not a JSON object, is one :class:`UserError` naming it (``what``: the file's kind)."""
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise UserError(f"{path}: cannot be read (no such file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot be read as {what} ({exc})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise UserError(f"{where}: each line must be a JSON object")
        rows.append((where, row))
    return rows
