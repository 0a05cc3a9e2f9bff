"""``consilium view RUN_DIR`` on a cohort folder: the pages of ``RUN_DIR/view/`` (or ``--out``).

``index.html`` has a row per arm of arms.csv, ``cases/<case>.html`` a page per case with its variants
side by side, and ``arms/…/<case>.<variant>.html`` a page per arm that left a trace (as ``view TRACE``
renders it), every page linked to the others by relative links. Each page is written atomically and
carries the viewer's generator mark: re-running the view replaces its own pages, and a file in their
place that lacks the mark (someone else's) is refused before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from consilium.cases import Case
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.protocols.registry import read_trace
from consilium.reports.consilium.data import read_arms
from consilium.reports.view_cohort import (
    ArmView,
    arm_cost,
    arm_judgements,
    case_page,
    case_rows,
    conclusion_of,
    rubric_score,
)
from consilium.reports.view_html import GENERATOR, esc, link, page
from consilium.reports.view_pages import INDEX, case_html, index_html
from consilium.reports.viewer import arm_section

__all__ = ["write_cohort_view"]


def _check_ours(path: Path) -> None:
    """Refuse to replace a file the viewer did not write (one without its generator mark)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise UserError(f"{path}: not a page `consilium view` wrote (a link or a folder); nothing was written "
                        "(move it, or give --out another folder)")
    if path.is_file():
        try:
            with path.open("rb") as handle:
                head = handle.read(4096)
        except OSError as exc:
            raise UserError(f"{path}: not readable ({exc.strerror or exc})") from None
        if GENERATOR.encode("utf-8") not in head:
            raise UserError(f"{path}: not a page `consilium view` wrote; nothing was written "
                            "(move it, or give --out another folder)")


def _nav(arm: ArmView, siblings: list[ArmView]) -> str:
    """Links from an arm's page to the index, its case and its other variants."""
    assert arm.page is not None
    links = [link(arm.page, INDEX, "cohort index"), link(arm.page, case_page(arm.row["case_id"]), "case page")]
    links += [link(arm.page, s.page, f"{s.row.get('format', '')}") for s in siblings
              if s is not arm and s.page and (s.row.get("protocol"), s.model, s.replicate)
              == (arm.row.get("protocol"), arm.model, arm.replicate)]
    return f"<nav>{' · '.join(links)}</nav>"


def _arm_page(out: Path, arm: ArmView, siblings: list[ArmView]) -> Case | None:
    """Read the arm's trace and judgements, write its page, keep what the index and case page show."""
    if arm.trace is None or arm.page is None:
        return None
    trace = read_trace(arm.trace)
    judgements = arm_judgements(arm.trace)
    arm.row["model"] = arm.row.get("model") or trace.model
    arm.conclusion, arm.cost = conclusion_of(trace), arm_cost(trace)
    arm.scores = {j.rubric: rubric_score(j) for j in judgements}
    title = f"{arm.row['case_id']} · {arm.row.get('format', '')} · {arm.model}"
    section = arm_section(arm.row.get("trace", ""), trace, judgements, _nav(arm, siblings))
    write_text_atomic(out / arm.page, page(title, f"<h1>{esc(title)}</h1>{section}"))
    return Case.model_validate(trace.case)


def write_cohort_view(run_dir: Path, out: Path) -> Path:
    """Write the cohort's pages into ``out`` and return the index's path."""
    rows = read_arms(run_dir, check=False)
    groups = list(case_rows(run_dir, rows))
    targets = [out / INDEX] + [out / case_page(c) for c, _ in groups] + [
        out / a.page for _, arms in groups for a in arms if a.page is not None]
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: not a folder; the view's pages go into a folder (give --out another one)")
    for target in targets:
        _check_ours(target)
    everything: list[ArmView] = []
    for case_id, arms in groups:
        case = None
        for arm in arms:
            case = _arm_page(out, arm, arms) or case
        rubrics = sorted({r for a in arms for r in a.scores})
        write_text_atomic(out / case_page(case_id), case_html(case_id, case, arms, rubrics))
        everything += arms
    rubrics = sorted({r for a in everything for r in a.scores})
    return write_text_atomic(out / INDEX, index_html(f"Cohort {run_dir.resolve().name}", everything, rubrics))
