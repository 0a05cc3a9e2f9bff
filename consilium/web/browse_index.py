"""The cohort index: the filters (a form that works without scripts), a progress line, and one row per arm.

Every cell is escaped text; each row carries its values in ``data-`` attributes, which browse.js sorts and
filters by in the page, and the live updates (browse_events.py) send a new arm's row rendered here.
"""

from __future__ import annotations

from urllib.parse import quote

from consilium.cohort.completeness import Completeness
from consilium.models.pricing import format_usd
from consilium.reports.view_pages import score_cell, status_cell, tokens_cell
from consilium.web.browse_query import FILTERS, SORTS, Query, score_key
from consilium.web.browse_rows import Arm
from consilium.web.page import esc

__all__ = ["COLUMNS", "case_link", "index_body", "progress_text", "row_html"]

NONE = "—"
#: (sort key, heading) of the columns before the scores.
COLUMNS = (("case", "case"), ("model", "model"), ("protocol", "protocol"), ("format", "format or mode"),
           ("status", "status"), ("stop", "stop reason"), ("rounds", "rounds or turns"), ("tokens", "panel tokens"),
           ("cost", "panel cost"), ("judge_cost", "judge cost"), ("total_cost", "total cost"))


def _number(value: float | int | None) -> str:
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def case_link(run: int, case_id: str) -> str:
    """A case page's path (the id quoted: an arms.csv edited by hand may hold any text)."""
    return f"/runs/{run}/case/{quote(case_id, safe='')}"


def row_html(run: int, arm: Arm, rubrics: list[str]) -> str:
    """One arm's table row: its cells, its values as data attributes, red with its error when it failed; made
    once per read of the folder (the arm is read again when a table changes: browse_rows.cached_arms)."""
    key = (run, tuple(rubrics))
    found = arm.html.get(key)
    if found is None:
        found = arm.html[key] = _row_html(run, arm, rubrics)
    return found


def _row_html(run: int, arm: Arm, rubrics: list[str]) -> str:
    row = arm.row
    link = f"/runs/{run}/arm/{arm.id}"
    data = {"id": arm.id, "case": row.case_id, "model": arm.model, "protocol": row.protocol, "format": row.format,
            "replicate": "" if row.replicate is None else str(row.replicate),
            "status": row.status, "stop": row.stop_reason, "rounds": _number(arm.rounds),
            "tokens": _number(arm.tokens), "cost": _number(row.cost_usd),
            "judge_cost": _number(arm.number("judge_cost_usd")), "total_cost": _number(arm.number("total_cost_usd"))}
    for index, rubric in enumerate(rubrics):
        found = arm.scores.get(rubric)
        data[score_key(index)] = _number(found.mean if found is not None else None)
    attrs = "".join(f' data-{key.replace("_", "-")}="{esc(value)}"' for key, value in data.items())
    status = esc(status_cell(row))
    cells = [f'<a href="{esc(case_link(run, row.case_id))}">{esc(row.case_id)}</a>', esc(arm.model),
             esc(row.protocol), esc(row.format if row.replicate is None else f"{row.format} · r{row.replicate}"),
             f'<span class="error">{status}</span>' if not arm.completed else status,
             esc(row.stop_reason or NONE), esc(_number(arm.rounds) or NONE),
             esc(tokens_cell(row)), esc(format_usd(row.cost_usd)),
             esc(format_usd(arm.number("judge_cost_usd"))), esc(format_usd(arm.number("total_cost_usd"))),
             *(esc(score_cell(arm.scores.get(rubric))) for rubric in rubrics),
             f'<a href="{esc(link)}">arm</a>']
    kind = ' class="arm failed"' if not arm.completed else ' class="arm"'
    return f"<tr{kind}{attrs}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def progress_text(done: Completeness | None, arms: int) -> str:
    """``8 of 12 planned arms finished (status: running)``; without a manifest, the arms there are."""
    return done.summary() if done is not None else f"{arms} arms (no manifest: no plan known)"


def _select(name: str, label: str, values: list[str], chosen: str) -> str:
    options = "".join(f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>'
                      for v in values)
    return (f'<label>{esc(label)} <select name="{esc(name)}" data-filter="{esc(name)}">'
            f'<option value="">any</option>{options}</select></label> ')


def _form(arms: list[Arm], rubrics: list[str], query: Query) -> str:
    labels = {"model": "model", "format": "format or mode", "protocol": "protocol", "status": "status",
              "stop": "stop reason"}
    selects = "".join(_select(name, labels[name], sorted({v for a in arms if (v := get(a))}), query.filters[name])
                      for name, get in FILTERS.items())
    rubric = "".join(f'<option value="{esc(r)}"{" selected" if r == query.rubric else ""}>{esc(r)}</option>'
                     for r in rubrics)
    low = "" if query.low is None else f"{query.low:g}"
    high = "" if query.high is None else f"{query.high:g}"
    scores = (f'<label>score of <select name="rubric" data-filter="rubric">{rubric}</select></label> '
              f'<label>from <input type="number" step="any" name="min" value="{esc(low)}" data-filter="min"></label> '
              f'<label>to <input type="number" step="any" name="max" value="{esc(high)}" data-filter="max"></label> '
              if rubrics else "")
    hidden = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}" data-keep="{k}">'
                     for k, v in (("sort", query.sort), ("order", "desc" if query.descending else "")) if v)
    return (f'<form class="filters" method="get" action="">{selects}{scores}{hidden}'
            f'<button type="submit">Filter</button> <a href="?">clear</a></form>')


def _heading(key: str, text: str, query: Query, kind: str) -> str:
    descending = query.sort == key and not query.descending
    mark = (" ▼" if query.descending else " ▲") if query.sort == key else ""
    href = query.link(sort=key, order="desc" if descending else "")
    return (f'<th class="sortable" data-sort="{esc(key)}" data-kind="{kind}">'
            f'<a href="{esc(href)}">{esc(text)}</a><span class="mark">{esc(mark)}</span></th>')


def index_body(run: int, title: str, arms: list[Arm], shown: list[Arm], rubrics: list[str], query: Query,
               done: Completeness | None, known: int, more: tuple[str, str] = ("", "")) -> str:
    """The index page's body: heading, links, progress, filters, the table (``shown`` arms of ``arms``);
    ``more``: the caller's further links and a notice under them (HTML)."""
    failed = sum(not a.completed for a in arms)
    head = "".join(_heading(key, text, query, SORTS[key]) for key, text in COLUMNS)
    head += "".join(_heading(score_key(i), f"score: {r}", query, "number") for i, r in enumerate(rubrics))
    head += "<th>page</th>"
    rows = "".join(row_html(run, arm, rubrics) for arm in shown)
    return (f'<h1>{esc(title)}</h1><nav><a href="/">run folders</a><a href="/runs/{run}/summary">summary</a>'
            f'{more[0]}</nav>'
            f'{more[1]}<p class="progress" id="progress">{esc(progress_text(done, len(arms)))}</p>'
            f'<p class="counts"><span id="shown">{len(shown)}</span> of <span id="total">{len(arms)}</span> arms '
            f'shown · {failed} failed</p>{_form(arms, rubrics, query)}'
            f'<table class="arms" id="arms" data-run="{run}" data-known="{known}">'
            f'<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>')
