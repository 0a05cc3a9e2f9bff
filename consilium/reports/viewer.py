"""A self-contained static HTML view of traces and their judgements, for clinicians to read.

Every piece of case or model text goes through :func:`html.escape` (quotes included), and the page
carries no script, so text such as ``<script>`` or ``"><img onerror=…>`` renders as inert text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from html import escape

from consilium.cases import Case
from consilium.judges.record import Judgement
from consilium.traces.schema import BoardTrace, Trace, TurnTrace

__all__ = ["render_page"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem}
details{border:1px solid #ccc;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
summary{cursor:pointer;font-weight:600}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.6rem;border-radius:4px}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;
vertical-align:top}
.accept{color:#1a7f37}.dissent{color:#b42318}.diff_add{background:#e6ffec}.diff_sub{background:#ffebe9}
.diff_chg{background:#fff5b1}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _pre(text: str) -> str:
    return f"<pre>{_e(text)}</pre>"


def _table(headers: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _usage(trace: Trace | BoardTrace | TurnTrace) -> str:
    rows = [(stage, u.input_tokens, u.output_tokens, u.calls) for stage, u in trace.usage.by_stage.items()]
    total = trace.usage.total
    rows.append(("total" + (" (estimated)" if total.estimated else ""), total.input_tokens, total.output_tokens,
                 total.calls))
    return "<h3>Tokens by stage</h3>" + _table(("stage", "input", "output", "calls"), rows)


def _consilium(trace: Trace) -> str:
    parts = ["<h3>Panel</h3>", _table(("role", "category", "kind", "justification"),
                                      [(r.label, r.category_name, "primary" if r.primary else "supporting",
                                        r.justification) for r in trace.roles])]
    labels = {r.id: r.label for r in trace.roles}
    parts.append("<h3>Independent opinions</h3>")
    for opinion in trace.opinions:
        parts.append(f"<h4>{_e(labels.get(opinion.role, opinion.role))}</h4>{_pre(opinion.text)}")
    previous = None
    for report in trace.reports:
        title = "Initial report" if report.version == 1 else f"Report version {report.version} (after round " \
                                                             f"{report.round})"
        parts.append(f"<h3>{_e(title)}</h3>")
        if report.change_summary:
            parts.append(f"<p><em>Change: {_e(report.change_summary)}</em></p>")
        parts.append(_pre(report.text))
        if previous is not None:
            # HtmlDiff escapes the text it shows.
            diff = difflib.HtmlDiff(wrapcolumn=70).make_table(previous.text.splitlines(), report.text.splitlines(),
                                                              f"v{previous.version}", f"v{report.version}",
                                                              context=True, numlines=1)
            parts.append(f"<details><summary>Differences from version {previous.version}</summary>{diff}</details>")
        previous = report
    for rnd in trace.rounds:
        parts.append(f"<h3>Review round {rnd.round} (report v{rnd.report_version}, dissent "
                     f"{rnd.dissent_fraction:.0%})</h3>")
        rows = "".join(f"<tr><td>{_e(labels.get(v.role, v.role))}</td><td class=\"{_e(v.vote)}\">{_e(v.vote)}</td>"
                       f"<td>{_e(v.reason)}</td><td>{_e(v.requested_change or '')}</td></tr>" for v in rnd.votes)
        parts.append(f"<table><tr><th>role</th><th>vote</th><th>reason</th><th>requested change</th></tr>{rows}"
                     "</table>")
    parts.append(f"<p><strong>Stop reason:</strong> {_e(trace.stop_reason or '-')}</p>")
    return "".join(parts)


def _board(trace: BoardTrace) -> str:
    parts = [f"<p>Mode: {_e(trace.mode)}; stop: {_e(trace.stop_reason or '-')}</p>", "<h3>Transcript</h3>",
             _pre(trace.transcript)]
    if trace.validation is not None:
        parts.append(_table(("check", "passed", "detail"),
                            [(c.name, "yes" if c.passed else "no", c.detail) for c in trace.validation.checks]))
    for note in trace.notes:
        parts.append(f"<p><em>{_e(note)}</em></p>")
    return "".join(parts)


def _judgements(judgements: list[Judgement]) -> str:
    parts = []
    for judgement in judgements:
        parts.append(f"<h3>Judge: {_e(judgement.rubric)} v{judgement.rubric_version} "
                     f"({_e(judgement.judge_model)})</h3>")
        parts.append(_table(("component", "criterion", "score", "rationale or reason"),
                            [(i.component, i.criterion, "not evaluable" if i.not_evaluable else i.score,
                              i.rationale or i.reason or "") for i in judgement.items]))
    return "".join(parts)


def render_page(title: str, entries: list[tuple[str, Trace | BoardTrace | TurnTrace, list[Judgement]]]) -> str:
    body = [f"<h1>{_e(title)}</h1>"]
    for name, trace, judgements in entries:
        case = Case.model_validate(trace.case)
        variant = getattr(trace, "format", None) or getattr(trace, "mode", None) or trace.kind
        body.append(f"<details open><summary>{_e(case.id)} · {_e(trace.kind)} · {_e(variant)} · {_e(trace.model)} · "
                    f"{_e(trace.status)}</summary>")
        body.append(f"<p><small>{_e(name)}</small></p>")
        if trace.error:
            body.append(f"<p class=\"dissent\">Error: {_e(trace.error)}</p>")
        body.append("<h3>Case</h3>" + _pre(case.render()))
        if isinstance(trace, Trace):
            body.append(_consilium(trace))
        elif isinstance(trace, BoardTrace):
            body.append(_board(trace))
        else:
            body.append(f"<h3>Question</h3>{_pre(trace.question)}<h3>Answer ({_e(trace.role)})</h3>"
                        f"{_pre(trace.answer or '')}")
        body.append(_judgements(judgements) + _usage(trace) + "</details>")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")
