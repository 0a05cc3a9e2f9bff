"""A case's page: its reference and text, then per protocol one row per model (and replicate) with its variants
(formats or modes) side by side: each arm's conclusion, stop reason, rounds and judge scores; a failed arm in red
with its error. The case's traces are read here (a case has few arms)."""

from __future__ import annotations

from consilium.cases import Case
from consilium.reports.view_cohort import conclusion_of
from consilium.reports.view_pages import score_cell
from consilium.reports.view_reference import reference_html
from consilium.runfolder import RunFolder
from consilium.web.browse_rows import Arm
from consilium.web.page import esc

__all__ = ["case_body"]


def _cell(run: int, folder: RunFolder, arm: Arm | None, rubrics: list[str]) -> tuple[str, Case | None]:
    if arm is None:
        return '<td class="muted">—</td>', None
    row = arm.row
    link = f'<a href="/runs/{run}/arm/{esc(arm.id)}">{esc(row.status)}</a>'
    if not arm.completed:
        return (f'<td class="variant failed"><p>{link}</p><p class="error">{esc(row.failed_stage)} '
                f"{esc(row.error)}</p></td>"), None
    case, conclusion = None, ""
    if arm.trace is not None and arm.trace.is_file():
        trace = folder.read_trace(arm.trace)
        case, conclusion = Case.model_validate(trace.case), conclusion_of(trace)
    facts = " · ".join(f"{name}: {value}" for name, value in (("stop reason", row.stop_reason),
                                                               ("rounds", arm.rounds)) if value not in ("", None))
    scores = "".join(f"<li>{esc(r)}: {esc(score_cell(arm.scores[r]))}</li>" for r in rubrics if r in arm.scores)
    text = f"<pre>{esc(conclusion)}</pre>" if conclusion else '<p class="muted">no conclusion</p>'
    return (f'<td class="variant"><p>{link} <small>{esc(facts)}</small></p>{text}'
            f'<ul class="scores">{scores}</ul></td>'), case


def case_body(run: int, folder: RunFolder, case_id: str, arms: list[Arm], rubrics: list[str]) -> str:
    """The case page's body for ``arms`` (this case's, in natural order)."""
    parts, case = [], None
    for protocol in dict.fromkeys(a.row.protocol for a in arms):
        mine = [a for a in arms if a.row.protocol == protocol]
        variants = list(dict.fromkeys(a.row.format for a in mine))
        keys = list(dict.fromkeys((a.model, a.row.replicate) for a in mine))
        replicates = any(replicate is not None for _, replicate in keys)
        head = "".join(f"<th>{esc(h)}</th>" for h in ["model", *(["replicate"] if replicates else []), *variants])
        rows = []
        for model, replicate in keys:
            by_variant = {a.row.format: a for a in mine if (a.model, a.row.replicate) == (model, replicate)}
            cells = []
            for variant in variants:
                cell, found = _cell(run, folder, by_variant.get(variant), rubrics)
                case = case or found
                cells.append(cell)
            rows.append(f"<tr><th>{esc(model)}</th>" + (f"<td>{esc(replicate)}</td>" if replicates else "")
                        + "".join(cells) + "</tr>")
        parts.append(f"<h2>{esc(protocol)}</h2><table class=\"variants\"><thead><tr>{head}</tr></thead>"
                     f"<tbody>{''.join(rows)}</tbody></table>")
    title = f"Case {case_id}" + (f": {case.title}" if case is not None and case.title else "")
    about = ('<p class="muted">No arm of this case left a trace, so its text is not known here.</p>' if case is None
             else f"<div class=\"side\"><div><h2>Reference (judge-only)</h2>{reference_html(case.reference)}</div>"
                  f"<div><h2>Case</h2><pre>{esc(case.render())}</pre></div></div>")
    return (f"<h1>{esc(title)}</h1><nav><a href=\"/runs/{run}/\">cohort index</a></nav>{about}"
            + "".join(parts))
