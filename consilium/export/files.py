"""Export files: written beside the target under a temporary name, then moved into place whole.

Nothing is ever overwritten unless asked: every target is checked before anything is written, and the
final move of a file that must be new is a hard link, which fails when the name has appeared meanwhile
(``--force`` replaces with ``os.replace``). A failed write leaves no file and no temporary file.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from consilium.errors import UserError
from consilium.fileio import in_the_way, make_folder

__all__ = ["check_targets", "export_folder", "new_file", "require"]


def require(module: str, what: str) -> ModuleType:
    """An optional package of the ``export`` extra, or a one-line error naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{what} needs the export extra ({module} is not installed): "
                        "pip install 'consilium[export]'") from None


def check_targets(targets: list[Path], *, force: bool, run_dir: Path | None = None) -> None:
    """Refuse, before anything is written, to write into the run folder itself (given ``run_dir``; with
    ``--force`` too), or to replace a file that exists (unless ``force``)."""
    if run_dir is not None:
        _refuse_run_files(targets, run_dir)
    if force:
        return
    # An export's files carry no mark (a CSV, a Parquet file, an Inspect log are read by other tools as they
    # are): every existing one stands in the way (consilium.fileio.in_the_way), the export's own included.
    existing = in_the_way(targets, {}, lambda _: None)
    if existing:
        more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        raise UserError(f"{existing[0].path}: exists{more}; pass --force to replace the export (nothing was "
                        "written)")


def _refuse_run_files(targets: list[Path], run_dir: Path) -> None:
    """An export written into the run folder itself would replace the run's own files (a cohort's
    arms.jsonl, its resume index, is an export's name too): refused, links followed."""
    root = run_dir.resolve()
    for target in targets:
        if target.resolve().parent == root:
            raise UserError(f"--out {target.parent}: the run folder itself, whose own files an export would "
                            "replace; give a folder of its own (default: RUN_DIR/export; nothing was written)")


@contextmanager
def export_folder(out: Path) -> Iterator[Path]:
    """``out`` while an export is written into it; when the export fails, the folders it created for it
    (empty, since a failed write leaves no file) are removed again."""
    missing = [p for p in (out, *out.parents) if not p.exists()]
    try:
        yield out
    except BaseException:
        for folder in missing:  # deepest first
            try:
                folder.rmdir()
            except OSError:  # not empty, or already gone: left as it is
                break
        raise


def _mode() -> int:
    current = os.umask(0)
    os.umask(current)
    return 0o666 & ~current


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def new_file(target: Path, *, force: bool) -> Iterator[Path]:
    """A temporary path beside ``target`` to write to; on success it becomes ``target``."""
    make_folder(target.parent)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise UserError(f"{target}: cannot write ({exc.strerror or exc}); nothing was changed there") from None
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, _mode())  # mkstemp creates 0600; give the file what a plain open() would
        yield tmp
        _fsync(tmp)
        if force:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise UserError(f"{target}: exists; pass --force to replace the export") from None
    except OSError as exc:
        raise UserError(f"{target}: cannot write ({exc.strerror or exc}); nothing was changed there") from None
    finally:
        tmp.unlink(missing_ok=True)
