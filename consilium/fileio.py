"""Atomic file writes: write to a temporary file beside the target, then rename.

A crash or a bad input never leaves a half-written file, and an existing file
is replaced only once its successor is complete. Every file consilium writes passes through here,
so this is also where API keys and URL credentials are masked (consilium/redact.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from consilium.errors import UserError
from consilium.redact import redact

__all__ = ["make_folder", "write_json_atomic", "write_text_atomic"]


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def make_folder(path: Path) -> Path:
    """Create an output folder (and its parents), or say in one line why it cannot be (exit 2)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{path}: cannot create the output folder ({exc.strerror or exc})") from None
    return path


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all. A disk that is full, read-only or not a folder is
    the user's to fix: :class:`UserError` naming the file (the CLI exits 2; a cohort stops, since every
    arm would fail alike)."""
    target = Path(path)
    try:
        return _write(target, text)
    except OSError as exc:
        raise UserError(f"{target}: cannot write ({exc.strerror or exc}); nothing was changed there") from None


def _write(target: Path, text: str) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates 0600; give the file the permissions a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(redact(text))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, indent: int = 2) -> Path:
    return write_text_atomic(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")
