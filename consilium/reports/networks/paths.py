"""Where ``consilium analyze`` puts an arm's files, so that the viewer can link them without reading them."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from consilium.runfolder.layout import trace_stem

__all__ = ["ANALYSIS_FOLDER", "arm_stem", "graph_picture"]

#: Where ``analyze`` writes by default, relative to the run folder (the viewer links pictures found there).
ANALYSIS_FOLDER = "analysis"


def arm_stem(run_dir: Path, trace_file: Path) -> str:
    """The arm's name in the analysis folder: its trace's path under RUN_DIR, without ``.trace.json``
    (``arms/<model>/<shard>/<case>.<variant>``); a trace outside RUN_DIR goes under ``other/``."""
    try:
        relative = PurePosixPath(trace_file.resolve().relative_to(run_dir.resolve()).as_posix())
    except ValueError:
        relative = PurePosixPath("other", trace_file.name)
    return trace_stem(relative)


def graph_picture(run_dir: Path, arm_page: str) -> Path:
    """Where ``analyze`` (by default) draws the arm whose view page is ``arm_page``
    (``arms/…/<case>.<variant>.html``, as :func:`consilium.reports.view_cohort.arm_page` names it)."""
    return run_dir / ANALYSIS_FOLDER / PurePosixPath(arm_page).with_suffix(".png")
