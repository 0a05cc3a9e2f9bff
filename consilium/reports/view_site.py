"""``consilium view RUN_DIR`` on a cohort folder: the pages of ``RUN_DIR/view/`` (or ``--out``).

``index.html`` has a row per arm of arms.csv, ``cases/<case>.html`` a page per case with its variants
side by side, and ``arms/…/<case>.<variant>.html`` a page per arm that left a trace (as ``view TRACE``
renders it), every page linked to the others by relative links. Each page is written atomically and
carries the viewer's generator mark and the run's id: re-running the view replaces its own pages, and a
file in their place that lacks the mark (someone else's), or a page of another run's view, is refused
before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from consilium.cases import Case
from consilium.cohort.completeness import Completeness
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.registry import read_trace
from consilium.judges.cost import judge_costs
from consilium.judges.record import Judgement
from consilium.reports.consilium.files import read_arms_as_written
from consilium.reports.networks.paths import graph_picture
from consilium.reports.view_cohort import (
    ArmView,
    arm_cost,
    arm_judgements,
    case_page,
    case_rows,
    conclusion_of,
    rubric_score,
)
from consilium.reports.view_html import check_ours, esc, link, page, stamped
from consilium.reports.view_pages import INDEX, case_html, index_html
from consilium.reports.viewer import arm_section
from consilium.runfolder.folder import RunFolder

__all__ = ["run_id", "write_cohort_view"]


def _nav(arm: ArmView, siblings: list[ArmView], graph: str = "") -> str:
    """Links from an arm's page to the index, its case and its other variants (and ``graph``, a link to its
    deliberation graph's picture, when ``consilium analyze`` drew one)."""
    assert arm.page is not None
    links = [link(arm.page, INDEX, "cohort index"), link(arm.page, case_page(arm.row.case_id), "case page")]
    links += [link(arm.page, s.page, s.row.format) for s in siblings
              if s is not arm and s.page and (s.row.protocol, s.model, s.replicate)
              == (arm.row.protocol, arm.model, arm.replicate)]
    links += [graph] if graph else []
    return f"<nav>{' · '.join(links)}</nav>"


def _graph_link(run_dir: Path, out: Path, page_path: str) -> str:
    """A link to the picture ``analyze`` drew of the arm (docs/networks.md), if it is there."""
    picture = graph_picture(run_dir, page_path)
    if not picture.is_file():
        return ""
    href = Path(os.path.relpath(picture.resolve(), (out / page_path).parent.resolve())).as_posix()
    return f"<a href=\"{esc(quote(href))}\">deliberation graph</a>"


def _arm_page(out: Path, arm: ArmView, siblings: list[ArmView], run_dir: Path, run: str,
              judged: dict[str, list[Judgement]]) -> Case | None:
    """Read the arm's trace, write its page with its judgements (``judged``, by page), keep what the index and
    case page show."""
    if arm.trace is None or arm.page is None:
        return None
    trace = read_trace(arm.trace)
    judgements = judged[arm.page]
    if not arm.row.model:  # a folder written before arms.csv named the model: its trace does
        arm.row = arm.row.model_copy(update={"model": trace.model})
    arm.conclusion, arm.cost = conclusion_of(trace), arm_cost(trace)
    arm.scores = {j.rubric: rubric_score(j) for j in judgements}
    arm.judges = [cost for j in judgements for cost in judge_costs(j)]
    title = f"{arm.row.case_id} · {arm.row.format} · {arm.model}"
    section = arm_section(arm.row.trace, trace, judgements,
                          _nav(arm, siblings, _graph_link(run_dir, out, arm.page)))
    write_text_atomic(out / arm.page, stamped(page(title, f"<h1>{esc(title)}</h1>{section}"), run))
    return Case.model_validate(trace.case)


def write_cohort_view(run_dir: Path, out: Path, done: Completeness | None) -> Path:
    """Write the cohort's pages into ``out`` and return the index's path; ``done`` (the folder against its
    manifest's plan, consilium/reports/partial.py) puts a partial cohort's notice and missing arms on the index."""
    rows = read_arms_as_written(run_dir)
    groups = list(case_rows(run_dir, rows))
    targets = [out / INDEX] + [out / case_page(c) for c, _ in groups] + [
        out / a.page for _, arms in groups for a in arms if a.page is not None]
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: not a folder; the view's pages go into a folder (give --out another one)")
    run = run_id(run_dir)
    for target in targets:
        check_ours(target, run)
    # Every judgement record is read (and checked) before the first page is written: a bad one writes nothing.
    judged = {a.page: arm_judgements(a.trace) for _, arms in groups for a in arms
              if a.trace is not None and a.page is not None}
    everything: list[ArmView] = []
    for case_id, arms in groups:
        case = None
        for arm in arms:
            case = _arm_page(out, arm, arms, run_dir, run, judged) or case
        rubrics = sorted({r for a in arms for r in a.scores})
        write_text_atomic(out / case_page(case_id), stamped(case_html(case_id, case, arms, rubrics, done), run))
        everything += arms
    rubrics = sorted({r for a in everything for r in a.scores})
    return write_text_atomic(out / INDEX, stamped(index_html(f"Cohort {run_dir.resolve().name}", everything,
                                                             rubrics, done), run))


def run_id(run_dir: Path) -> str:
    """The cohort's run id, as its manifest records it (else its folder's name): the pages' run mark."""
    try:
        recorded = RunFolder(run_dir).manifest_data().get("run_id")
    except UserError:  # no manifest, or not a readable one
        recorded = None
    return recorded if isinstance(recorded, str) and recorded else run_dir.resolve().name
