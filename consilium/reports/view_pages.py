"""The cohort view's own pages: the index (a partial cohort's notice and missing arms, a row per arm, a header
that counts them) and a page per case
(the reference, then each protocol's variants side by side). Every cell is text, escaped, made from the arm's
typed row (a value shown as arms.csv writes it); every link is relative (docs/cohorts.md, "Viewing a cohort")."""

from __future__ import annotations

from consilium.cases import Case
from consilium.cohort.completeness import Completeness
from consilium.graphs.registry import protocols
from consilium.judges.cost import sum_costs
from consilium.models import Usage
from consilium.models.pricing import format_usd
from consilium.reports.view_cohort import ArmView, RubricScore, case_page
from consilium.reports.view_html import esc, link, page, pre
from consilium.reports.view_reference import reference_html
from consilium.runfolder.rows import ArmRow, text_of

__all__ = ["INDEX", "case_html", "cost_cell", "index_html", "rounds_cell", "score_cell", "status_cell",
           "tokens_cell"]

INDEX = "index.html"
NONE = "—"


def score_cell(score: RubricScore | None) -> str:
    """``2.13 (22 scored, 1 not evaluable)``, ``0.66 weighted mean (3 scored, 1 out of scope, 0 not
    evaluable)``; ``—`` for an arm the rubric did not judge."""
    if score is None:
        return NONE
    mean = NONE if score.mean is None else f"{score.mean:.2f}"
    measure = f" {score.measure}" if score.measure != "mean" else ""
    outside = f", {score.out_of_scope} out of scope" if score.out_of_scope else ""
    return f"{mean}{measure} ({score.scored} scored{outside}, {score.not_evaluable} not evaluable)"


def status_cell(row: ArmRow) -> str:
    """``completed``, else the status with the stage it failed at and its error (``failed at review: …``)."""
    status = row.status or NONE
    if status == "completed":
        return status
    stage = f" at {row.failed_stage}" if row.failed_stage else ""
    return f"{status}{stage}: {row.error}" if row.error else f"{status}{stage}"


def rounds_cell(row: ArmRow) -> str:
    """Review rounds (the consilium's; 0 is a count), else a board's turns, else ``—`` (an empty cell or none)."""
    rounds, turns = text_of(row.get("rounds")), text_of(row.get("turns"))
    if rounds:
        return rounds
    return f"{turns} turns" if turns else NONE


def tokens_cell(row: ArmRow) -> str:
    """Input plus output tokens, as generated (arms.csv's ``input_tokens`` + ``output_tokens``); ``—`` when
    either is unknown (an empty cell or no such column)."""
    if row.input_tokens is None or row.output_tokens is None:
        return NONE
    return f"{row.input_tokens + row.output_tokens:,}"


def cost_cell(cost: float | None) -> str:
    """Dollars as :func:`consilium.models.pricing.format_usd` writes them; ``—`` when unknown."""
    return format_usd(cost)


def judge_cells(arm: ArmView) -> list[str]:
    """The arm's judge tokens (input + output of every judge call its judgements hold, and the calls that failed
    without an answer), judge dollars and panel + judge dollars; an arm no judge scored: no token, $0 to judge."""
    usage = Usage.total(c.usage for c in arm.judges)
    failed = sum(c.failed_calls for c in arm.judges)
    judge = sum_costs(c.cost for c in arm.judges)
    tokens = f"{usage.input_tokens + usage.output_tokens:,}" + (f" ({failed} failed calls)" if failed else "")
    total = None if arm.cost is None or judge is None else arm.cost + judge
    return [tokens, cost_cell(judge), cost_cell(total)]


def _has_replicates(arms: list[ArmView]) -> bool:
    return any(arm.replicate for arm in arms)


def _header(arms: list[ArmView]) -> str:
    completed = sum(arm.row.completed for arm in arms)
    items = sum(s.items for arm in arms for s in arm.scores.values())
    not_evaluable = sum(s.not_evaluable for arm in arms for s in arm.scores.values())
    return (f"<p class=\"summary\">{len(arms)} arms · {completed} completed · {len(arms) - completed} failed · "
            f"{items} judge items, {not_evaluable} not evaluable</p>")


def _partial(done: Completeness | None) -> str:
    """A partial cohort's notice (consilium/reports/partial.py): what it holds of its plan, and a table of its
    missing arms (all of them: the page is for reading, each row short)."""
    if done is None or not done.partial:
        return ""
    notice = (f"<p class=\"partial\"><strong>Partial cohort: {esc(done.summary())}.</strong> The table below "
              "holds the finished arms only.</p>")
    if not done.missing:
        return notice
    replicates = any(arm.replicate is not None for arm in done.missing)
    head = "".join(f"<th>{h}</th>" for h in ["case", "model", "protocol", "format",
                                               *(["replicate"] if replicates else [])])
    rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in [
        arm.case_id, arm.model_spec, arm.protocol, arm.format,
        *([NONE if arm.replicate is None else str(arm.replicate)] if replicates else [])]) + "</tr>"
        for arm in done.missing)
    return (f"{notice}<h2>Missing arms: {len(done.missing)}</h2>"
            f"<table class=\"missing\"><tr>{head}</tr>{rows}</table>")


def index_html(title: str, arms: list[ArmView], rubrics: list[str], done: Completeness | None = None) -> str:
    """The index: a partial cohort's notice and missing arms, the header's counts, the cases, then one row per
    arm, in the order :func:`~consilium.reports.view_cohort.case_rows` gives them (natural case order)."""
    replicates = _has_replicates(arms)
    headers = ["case", "protocol", "model", "format", *(["replicate"] if replicates else []), "status",
               "stop reason", "rounds", "panel tokens", "panel cost", "judge tokens", "judge cost", "total cost",
               *(f"score: {r}" for r in rubrics), "page"]
    rows = []
    for arm in arms:
        row = arm.row
        cells = [link(INDEX, case_page(row.case_id), row.case_id), esc(row.protocol),
                 esc(arm.model), esc(row.format), *([esc(arm.replicate)] if replicates else []),
                 esc(status_cell(row)), esc(row.stop_reason or NONE), esc(rounds_cell(row)),
                 esc(tokens_cell(row)), esc(cost_cell(arm.cost)), *(esc(c) for c in judge_cells(arm)),
                 *(esc(score_cell(arm.scores.get(r))) for r in rubrics),
                 link(INDEX, arm.page, "arm page") if arm.page else NONE]
        status = " class=\"failed\"" if not row.completed else ""
        rows.append(f"<tr{status}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    cases = " ".join(link(INDEX, case_page(c), c) for c in dict.fromkeys(a.row.case_id for a in arms))
    body = (f"<h1>{esc(title)}</h1>{_partial(done)}{_header(arms)}<p>Cases: {cases}</p>"
            f"<table class=\"arms\"><tr>{head}</tr>{''.join(rows)}</table>")
    return page(title, body)


def _variants(protocol: str, arms: list[ArmView]) -> list[str]:
    """The protocol's variants these arms ran, in the protocol's order (as arms.csv names them)."""
    present = list(dict.fromkeys(a.row.format for a in arms))
    known = protocols().get(protocol)
    order = [known.arm_variant(v) for v in known.variants] if known is not None else []
    return [v for v in order if v in present] + [v for v in present if v not in order]


def _arm_cell(here: str, arm: ArmView | None, rubrics: list[str]) -> str:
    if arm is None:
        return f"<td>{NONE}</td>"
    row = arm.row
    known = protocols().get(row.protocol)
    columns = ("stop_reason", *(known.row_columns if known is not None else ()))
    shown = {c: text_of(row.get(c)) for c in dict.fromkeys(columns)}  # as arms.csv writes each: 0 shown, "" not
    facts = " · ".join(f"{c}: {text}" for c, text in shown.items() if text)
    scores = "".join(f"<br>{esc(r)}: {esc(score_cell(arm.scores[r]))}" for r in rubrics if r in arm.scores)
    status = link(here, arm.page, status_cell(row)) if arm.page else esc(status_cell(row))
    text = pre(arm.conclusion) if arm.conclusion else "<p class=\"muted\">no conclusion</p>"
    return f"<td><p>{status}</p>{text}<p><small>{esc(facts)}{scores}</small></p></td>"


def _case_notice(case_id: str, done: Completeness | None) -> str:
    """A partial cohort's notice on a case page, with the case's own missing arms (a ``—`` cell below)."""
    if done is None or not done.partial:
        return ""
    mine = [arm.label().removeprefix(f"{arm.case_id} · ") for arm in done.missing if arm.case_id == case_id]
    missing = f" Missing arms of this case: {'; '.join(mine)}." if mine else ""
    return f"<p class=\"partial\"><strong>Partial cohort: {esc(done.summary())}.</strong>{esc(missing)}</p>"


def case_html(case_id: str, case: Case | None, arms: list[ArmView], rubrics: list[str],
              done: Completeness | None = None) -> str:
    """A case's page: a partial cohort's notice, its reference and text, then per protocol one row per
    (model, replicate) with its variants side by side: each arm's conclusion, its rounds (or turns) and stop
    reason, its scores."""
    here = case_page(case_id)
    title = f"Case {case_id}" + (f": {case.title}" if case is not None and case.title else "")
    parts = [f"<h1>{esc(title)}</h1><nav>{link(here, INDEX, 'cohort index')}</nav>{_case_notice(case_id, done)}"]
    if case is None:
        parts.append("<p class=\"muted\">No arm of this case left a trace, so its text is not known here.</p>")
    else:
        parts.append("<h2>Reference (judge-only)</h2>" + reference_html(case.reference))
        parts.append(f"<details><summary>Case text</summary>{pre(case.render())}</details>")
    replicates = _has_replicates(arms)
    for protocol in dict.fromkeys(a.row.protocol for a in arms):
        mine = [a for a in arms if a.row.protocol == protocol]
        variants = _variants(protocol, mine)
        keys = list(dict.fromkeys((a.model, a.replicate) for a in mine))
        head = "".join(f"<th>{esc(h)}</th>" for h in ["model", *(["replicate"] if replicates else []), *variants])
        rows = []
        for model, replicate in keys:
            cells = {a.row.format: a for a in mine if (a.model, a.replicate) == (model, replicate)}
            rows.append(f"<tr><td>{esc(model)}</td>" + (f"<td>{esc(replicate)}</td>" if replicates else "")
                        + "".join(_arm_cell(here, cells.get(v), rubrics) for v in variants) + "</tr>")
        parts.append(f"<h2>{esc(protocol)}</h2><table class=\"variants\"><tr>{head}</tr>{''.join(rows)}</table>")
    return page(title, "".join(parts))
