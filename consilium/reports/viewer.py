"""A self-contained static HTML view of traces and their judgements, for clinicians to read.

Every piece of case or model text goes through :func:`html.escape` (quotes included), and the page
carries no script, so text such as ``<script>`` or ``"><img onerror=…>`` renders as inert text.
"""

from __future__ import annotations

import difflib

from consilium.cases import Case
from consilium.graphs.registry import protocol_of
from consilium.graphs.view import Block, Heading, Note, Table, Text
from consilium.judges.cost import judge_costs, sum_costs
from consilium.judges.record import Judgement, JudgementItem
from consilium.models import Usage
from consilium.models.pricing import format_usd, stage_costs, trace_cost
from consilium.reports.view_html import esc, page, pre, table
from consilium.reports.view_reference import reference_section
from consilium.runfolder.records import out_of_scope
from consilium.traces.schema import TraceBase

__all__ = ["arm_section", "render_page"]


def _usage(trace: TraceBase) -> str:
    """Tokens and dollars by stage (as generated; "—": a call without prices), then the total."""
    costs = stage_costs(trace)
    rows = [(stage, u.input_tokens, u.output_tokens, u.calls, format_usd(costs.get(stage)))
            for stage, u in trace.usage.by_stage.items()]
    total = trace.usage.total
    rows.append(("total" + (" (estimated)" if total.estimated else ""), total.input_tokens, total.output_tokens,
                 total.calls, format_usd(trace_cost(trace))))
    return "<h3>Tokens by stage</h3>" + table(("stage", "input", "output", "calls", "cost"), rows)


def _spend(trace: TraceBase, judgements: list[Judgement]) -> str:
    """The panel's tokens and dollars beside each judge's (per rubric; a jury's judges apart, with the calls
    that failed without an answer), the judges' together, and the sum; "—": a call without prices."""
    panel, panel_cost = trace.usage.total, trace_cost(trace)
    costs = [cost for judgement in judgements for cost in judge_costs(judgement)]
    judges, judge_cost = Usage.total(c.usage for c in costs), sum_costs(c.cost for c in costs)
    total = None if panel_cost is None or judge_cost is None else panel_cost + judge_cost
    rows: list[tuple[str, str, int, int, int, int | str, str]] = [
        ("panel", "", panel.input_tokens, panel.output_tokens, panel.calls, "", format_usd(panel_cost))]
    rows += [(f"judge {c.judge_model}", c.rubric, c.usage.input_tokens, c.usage.output_tokens, c.usage.calls,
              c.failed_calls, format_usd(c.cost)) for c in costs]
    rows += [("judges", "", judges.input_tokens, judges.output_tokens, judges.calls,
              sum(c.failed_calls for c in costs), format_usd(judge_cost))]
    rows += [("panel + judges", "", panel.input_tokens + judges.input_tokens, panel.output_tokens
              + judges.output_tokens, panel.calls + judges.calls, "", format_usd(total))]
    return "<h3>Cost: panel and judges</h3>" + table(
        ("who", "rubric", "input", "output", "calls", "failed calls", "cost"), rows)


def _block(block: Block) -> str:
    """One of a protocol's view blocks as HTML, every text escaped."""
    if isinstance(block, Heading):
        return f"<h{block.level}>{esc(block.text)}</h{block.level}>"
    if isinstance(block, Text):
        return pre(block.text)
    if isinstance(block, Note):
        text = f"<strong>{esc(block.label)}</strong> {esc(block.text)}" if block.label else esc(block.text)
        text = f"<em>{text}</em>" if block.emphasis else text
        return f"<p class=\"{esc(block.tone)}\">{text}</p>" if block.tone else f"<p>{text}</p>"
    if isinstance(block, Table):
        if not block.classes:
            return table(block.headers, block.rows)
        head = "".join(f"<th>{esc(h)}</th>" for h in block.headers)
        body = "".join("<tr>" + "".join(f"<td class=\"{esc(k)}\">{esc(c)}</td>" if k else f"<td>{esc(c)}</td>"
                                        for c, k in zip(row, kinds, strict=True)) + "</tr>"
                       for row, kinds in zip(block.rows, block.classes, strict=True))
        return f"<table><tr>{head}</tr>{body}</table>"
    # HtmlDiff escapes the text it shows.
    diff = difflib.HtmlDiff(wrapcolumn=70).make_table(block.old.splitlines(), block.new.splitlines(), block.old_label,
                                                      block.new_label, context=True, numlines=1)
    return f"<details><summary>{esc(block.summary)}</summary>{diff}</details>"


def _judgements(judgements: list[Judgement]) -> str:
    parts = []
    for judgement in judgements:
        parts.append(f"<h3>Judge: {esc(judgement.rubric)} v{judgement.rubric_version} "
                     f"({esc(judgement.judge_model)})</h3>")
        parts.append(table(("component", "criterion", "score", "rationale or reason"),
                            [(i.component, i.criterion, "not evaluable" if i.not_evaluable else
                              "out of scope" if out_of_scope(i) else i.score,
                              _jury_votes(i) or i.rationale or i.reason or "") for i in judgement.items]))
    return "".join(parts)


def _jury_votes(item: JudgementItem) -> str:
    """A jury's item: how its verdict was reached (the judges left out, a tie) and each judge's vote."""
    if item.verdict is None or item.votes is None:
        return ""
    v = item.verdict
    scoped = "scope" in item.detail  # the four-decision rubric's −1 is out of scope, no score (view_cohort)
    votes = "; ".join(f"{vote.judge}: " + ("not evaluable" if vote.not_evaluable else
                                           "out of scope" if scoped and vote.score == -1 else str(vote.score))
                      for vote in item.votes)
    return (f"jury verdict ({v.rule} of {v.evaluable} of {v.judges} judges, {v.not_evaluable} not evaluable"
            + (f"; {v.tie}" if v.tie else "") + (f"; {item.reason}" if item.reason else "") + f"). Votes: {votes}")


def arm_section(name: str, trace: TraceBase, judgements: list[Judgement], nav: str = "") -> str:
    """One arm as the viewer shows it: the case, the reference beside the conclusion, the protocol's blocks,
    the judgements and the tokens; ``nav`` (HTML the caller built) goes under its summary line."""
    case = Case.model_validate(trace.case)
    protocol = protocol_of(trace)
    variant = protocol.variant(trace)
    body = [f"<details open><summary>{esc(case.id)} · {esc(protocol.name)} · {esc(variant)} · {esc(trace.model)} · "
            f"{esc(trace.status)}</summary>", nav, f"<p><small>{esc(name)}</small></p>"]
    if trace.error:
        body.append(f"<p class=\"dissent\">Error: {esc(trace.error)}</p>")
    body.append("<h3>Case</h3>" + pre(case.render()))
    body.append(reference_section(case, trace))
    body.append("".join(_block(block) for block in protocol.view(trace)))
    body.append(_judgements(judgements) + _usage(trace) + _spend(trace, judgements) + "</details>")
    return "".join(body)


def render_page(title: str, entries: list[tuple[str, TraceBase, list[Judgement]]]) -> str:
    """Every trace on one page (``consilium view TRACE``, or a folder without arms.csv)."""
    body = [f"<h1>{esc(title)}</h1>"] + [arm_section(name, trace, judgements) for name, trace, judgements in entries]
    return page(title, "".join(body))
