"""A run folder's lock, and the temporary files an interrupted write left in it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from consilium.errors import UserError
from consilium.runfolder.layout import own_files

__all__ = ["RunLock", "clean_temp_files"]


class RunLock:
    """An exclusive lock on a run folder for as long as a cohort (or a run with a person at the table) writes
    into it: a second cohort or resume of the same folder is refused at once instead of doing the same work
    twice. ``holder`` names, in the refusal, what else holds it."""

    def __init__(self, run_dir: Path, *, holder: str = "another cohort") -> None:
        self.path = run_dir / ".lock"
        self.holder = holder
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise UserError(f"{self.path}: cannot open the run folder's lock ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise UserError(f"{self.path.parent}: in use by {self.holder} (pid {holder}); wait for it to end") \
                from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def clean_temp_files(run_dir: Path) -> int:
    """Remove the temporary files an interrupted write left (``.<name>.<random>.tmp``, see
    consilium/fileio.py); call only while holding the folder's lock. Returns how many. Only the cohort's own:
    a run nested in it (an ablation under ``ablate/``) holds no lock of this folder and may be writing."""
    removed = 0
    for path in own_files(run_dir, ".*.tmp"):
        if path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed += 1
    return removed
