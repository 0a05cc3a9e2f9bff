"""Atomic file writes, and the one rule of which existing outputs a command may replace.

A crash or a bad input never leaves a half-written file, and an existing file
is replaced only once its successor is complete. Every file consilium writes passes through here,
so this is also where API keys and URL credentials are masked (consilium/redact.py).

**Ownership** (:func:`in_the_way`). A command replaces only what it wrote. What it writes carries its
*mark*: a mapping that names what the output is of (the run a view page shows, the analysis a folder
holds, the judge and prompt of a judgement; empty when the writer's tag alone says enough), kept where the
format has room for it — a ``<meta>`` of a page, the first line of a markdown, a stamp file of a folder,
fields of a JSON record. An existing output is the command's own when its mark can be read back and agrees
with the command's on every key the mark names; anything else stands in the way: a link or a folder where a
file goes, a file without the mark (an export's files carry none: every existing one is in the way), one
that cannot be read, or the mark of another run, analysis or judge. Each command says in its own words why
(one line, exit 2, nothing written) and which flag, if any, replaces it (docs/reliability.md, "Nothing
overwritten, nothing mixed").
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from consilium.errors import UserError
from consilium.redact import redact

__all__ = ["InTheWay", "Mark", "in_the_way", "make_folder", "write_json_atomic", "write_text_atomic"]


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


#: What an output says of who wrote it and of what (see the module's docstring); None: no mark at all.
Mark = Mapping[str, object]


@dataclass(frozen=True)
class InTheWay:
    """An existing output a command may not replace, and why: ``"not a file"`` (a link, or a folder where a
    file goes), ``"unmarked"``, ``"unreadable"`` (``error`` says why) or ``"another"`` (``mark`` is the one
    found, naming another run, analysis or judge)."""

    path: Path
    why: Literal["not a file", "unmarked", "unreadable", "another"]
    mark: Mark | None = None
    error: Exception | None = None


def _present(path: Path, folder: bool) -> bool:
    if folder:
        return path.is_dir() and any(path.iterdir())
    return path.exists() or path.is_symlink()


def in_the_way(paths: Iterable[Path], ours: Mark, read_mark: Callable[[Path], Mark | None], *,
               folder: bool = False) -> list[InTheWay]:
    """Of ``paths`` (files; with ``folder``, output folders, present when not empty), those that stand in the
    way of the command whose mark is ``ours``, in order; ``read_mark`` reads an output's mark (None when it has
    none; an OSError or ValueError, KeyError or TypeError when it cannot be read)."""
    found = []
    for path in paths:
        if not _present(path, folder):
            continue
        if not folder and (path.is_symlink() or not path.is_file()):
            found.append(InTheWay(path, "not a file"))
            continue
        try:
            mark = read_mark(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            found.append(InTheWay(path, "unreadable", error=exc))
            continue
        if mark is None:
            found.append(InTheWay(path, "unmarked"))
        elif any(key in ours and ours[key] != value for key, value in mark.items()):
            found.append(InTheWay(path, "another", mark=mark))
    return found
