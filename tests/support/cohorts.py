"""The one factory of cohort fixtures: a scripted cohort run once per test session (once per pytest-xdist
worker) and shared by every test that reads it; a test or module that writes into a cohort works on a copy.

Running a cohort is most of an end-to-end test module's time, and several modules read the same cohort
(tests/support/cohort_fixture.py's is read by the compare, figures, export, partial-cohort and run-folder
tests). conftest.py declares the shared cohorts with :func:`cohort_fixture`; a test that writes (compare's
tables, a view, a judgement made again, a file edited to test a reader) takes :func:`copy_cohort` of it.

A shared cohort is checked at the session's end: a file added, removed or rewritten in it fails the session
loudly, naming the files, so a test that forgot to copy cannot make its neighbours depend on running order.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.isolation import isolated

__all__ = ["cohort_fixture", "copy_cohort", "snapshot"]

#: The folders a cohort command may write beside its records (the viewer's pages, an export); a copy for a
#: test leaves them out so the test starts from the records alone.
DERIVED = ("view", "export")


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: relative path → (size, modification time in ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """The files added, removed or rewritten between two snapshots, each with what happened."""
    added = [f"added {p}" for p in after.keys() - before.keys()]
    removed = [f"removed {p}" for p in before.keys() - after.keys()]
    rewritten = [f"rewritten {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(added + removed + rewritten)


def cohort_fixture(build: Callable[[Path], Path], *, name: str) -> Any:
    """A session-wide fixture ``name``: ``build(tmp)`` run once, in the conftest's isolation for a fixture
    wider than a test, returning the run folder it made; the folder is checked unchanged at the end."""

    @pytest.fixture(scope="session", name=name)
    def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
        tmp = tmp_path_factory.mktemp(name)
        with isolated(tmp):
            run_dir = build(tmp)
        before = snapshot(run_dir)
        yield run_dir
        changed = changes(before, snapshot(run_dir))
        assert not changed, (f"the shared cohort {name} was written into by a test (take copy_cohort of it "
                             f"instead): {'; '.join(changed[:10])}")

    return shared


def copy_cohort(run_dir: Path, into: Path) -> Path:
    """A copy of the run folder ``run_dir`` as ``into / run_dir.name`` (its name kept), without the derived
    folders, for a test that writes into it."""
    copy = into / run_dir.name
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns(*DERIVED))
    return copy
