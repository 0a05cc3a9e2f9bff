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
from consilium.protocols.registry import protocol_of
from consilium.protocols.view import Block, Heading, Note, Table, Text
from consilium.traces.schema import TraceBase

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


def _usage(trace: TraceBase) -> str:
    rows = [(stage, u.input_tokens, u.output_tokens, u.calls) for stage, u in trace.usage.by_stage.items()]
    total = trace.usage.total
    rows.append(("total" + (" (estimated)" if total.estimated else ""), total.input_tokens, total.output_tokens,
                 total.calls))
    return "<h3>Tokens by stage</h3>" + _table(("stage", "input", "output", "calls"), rows)


def _block(block: Block) -> str:
    """One of a protocol's view blocks as HTML, every text escaped."""
    if isinstance(block, Heading):
        return f"<h{block.level}>{_e(block.text)}</h{block.level}>"
    if isinstance(block, Text):
        return _pre(block.text)
    if isinstance(block, Note):
        text = f"<strong>{_e(block.label)}</strong> {_e(block.text)}" if block.label else _e(block.text)
        text = f"<em>{text}</em>" if block.emphasis else text
        return f"<p class=\"{_e(block.tone)}\">{text}</p>" if block.tone else f"<p>{text}</p>"
    if isinstance(block, Table):
        if not block.classes:
            return _table(block.headers, block.rows)
        head = "".join(f"<th>{_e(h)}</th>" for h in block.headers)
        body = "".join("<tr>" + "".join(f"<td class=\"{_e(k)}\">{_e(c)}</td>" if k else f"<td>{_e(c)}</td>"
                                        for c, k in zip(row, kinds, strict=True)) + "</tr>"
                       for row, kinds in zip(block.rows, block.classes, strict=True))
        return f"<table><tr>{head}</tr>{body}</table>"
    # HtmlDiff escapes the text it shows.
    diff = difflib.HtmlDiff(wrapcolumn=70).make_table(block.old.splitlines(), block.new.splitlines(), block.old_label,
                                                      block.new_label, context=True, numlines=1)
    return f"<details><summary>{_e(block.summary)}</summary>{diff}</details>"


def _judgements(judgements: list[Judgement]) -> str:
    parts = []
    for judgement in judgements:
        parts.append(f"<h3>Judge: {_e(judgement.rubric)} v{judgement.rubric_version} "
                     f"({_e(judgement.judge_model)})</h3>")
        parts.append(_table(("component", "criterion", "score", "rationale or reason"),
                            [(i.component, i.criterion, "not evaluable" if i.not_evaluable else i.score,
                              i.rationale or i.reason or "") for i in judgement.items]))
    return "".join(parts)


def render_page(title: str, entries: list[tuple[str, TraceBase, list[Judgement]]]) -> str:
    body = [f"<h1>{_e(title)}</h1>"]
    for name, trace, judgements in entries:
        case = Case.model_validate(trace.case)
        protocol = protocol_of(trace)
        variant = protocol.variant(trace)
        body.append(f"<details open><summary>{_e(case.id)} · {_e(protocol.name)} · {_e(variant)} · {_e(trace.model)} · "
                    f"{_e(trace.status)}</summary>")
        body.append(f"<p><small>{_e(name)}</small></p>")
        if trace.error:
            body.append(f"<p class=\"dissent\">Error: {_e(trace.error)}</p>")
        body.append("<h3>Case</h3>" + _pre(case.render()))
        body.append("".join(_block(block) for block in protocol.view(trace)))
        body.append(_judgements(judgements) + _usage(trace) + "</details>")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")
