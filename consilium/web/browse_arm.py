"""An arm's page: the case, the panel, each opinion, each report version with a word diff from the one before,
each round's votes with reasons (a board: its transcript), the conclusion beside the case's reference, the judge
scores with their rationales, and the cost of the panel and of the judges. A failed arm shows its error in red.

What a protocol shows comes from its own view (:meth:`~consilium.graphs.base.Protocol.view`, the blocks
``consilium view`` renders), rendered here with every text escaped; the reference column is the viewer's.
"""

from __future__ import annotations

import difflib
import re

from consilium.cases import Case
from consilium.graphs.registry import protocol_of
from consilium.graphs.view import Block, Heading, Note, Table, Text
from consilium.judges.cost import judge_costs, sum_costs
from consilium.judges.record import Judgement
from consilium.models import Usage
from consilium.models.pricing import format_usd, trace_cost
from consilium.reports.view_cohort import rubric_score
from consilium.reports.view_pages import score_cell
from consilium.reports.view_reference import reference_section
from consilium.runfolder import RunFolder
from consilium.runfolder.records import out_of_scope
from consilium.traces.schema import TraceBase
from consilium.web.browse_index import case_link
from consilium.web.browse_rows import Arm
from consilium.web.page import esc

__all__ = ["arm_body", "word_diff"]

_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> str:
    """``new`` against ``old`` word by word: removed words in ``<del>``, added in ``<ins>``, all escaped."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(esc("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{esc(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{esc(''.join(b[j1:j2]))}</ins>")
    return f'<pre class="diff">{"".join(out)}</pre>'


def _pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


def _block(block: Block) -> str:
    if isinstance(block, Heading):
        level = min(max(block.level, 2), 6)
        return f"<h{level}>{esc(block.text)}</h{level}>"
    if isinstance(block, Text):
        return _pre(block.text)
    if isinstance(block, Note):
        label = f"<strong>{esc(block.label)}</strong> " if block.label else ""
        tone = f' class="{esc(block.tone)}"' if block.tone else ""
        return f"<p{tone}>{label}{esc(block.text)}</p>"
    if isinstance(block, Table):
        head = "".join(f"<th>{esc(h)}</th>" for h in block.headers)
        kinds = block.classes or tuple(("",) * len(row) for row in block.rows)
        body = "".join("<tr>" + "".join(f'<td class="{esc(k)}">{esc(c)}</td>' if k else f"<td>{esc(c)}</td>"
                                        for c, k in zip(row, kind, strict=True)) + "</tr>"
                       for row, kind in zip(block.rows, kinds, strict=True))
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return (f'<details class="report-diff" open><summary>{esc(block.summary)} ({esc(block.old_label)} → '
            f"{esc(block.new_label)})</summary>{word_diff(block.old, block.new)}</details>")


def _judgements(judgements: list[Judgement]) -> str:
    if not judgements:
        return "<h2>Judge scores</h2><p class=\"muted\">Not judged.</p>"
    parts = ["<h2>Judge scores</h2>"]
    for judgement in judgements:
        parts.append(f"<h3>{esc(judgement.rubric)} v{esc(judgement.rubric_version)} ({esc(judgement.judge_model)}): "
                     f"{esc(score_cell(rubric_score(judgement)))}</h3>")
        rows = []
        for item in judgement.items:
            score = "not evaluable" if item.not_evaluable else "out of scope" if out_of_scope(item) else \
                f"{item.score:g}" if item.score is not None else "—"
            why = item.rationale or item.reason or ""
            kind = ' class="not-evaluable"' if item.not_evaluable else ""
            rows.append(f"<tr{kind}><td>{esc(item.component)}</td><td>{esc(item.criterion)}</td><td>{esc(score)}</td>"
                        f"<td>{esc(why)}</td></tr>")
        parts.append("<table class=\"scores\"><thead><tr><th>component</th><th>criterion</th><th>score</th>"
                     f"<th>rationale or reason</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return "".join(parts)


def _cost(trace: TraceBase, judgements: list[Judgement]) -> str:
    """The panel's tokens and dollars, each judge's, and the sum ("—": a call without prices)."""
    panel, panel_cost = trace.usage.total, trace_cost(trace)
    costs = [cost for judgement in judgements for cost in judge_costs(judgement)]
    judges, judge_cost = Usage.total(c.usage for c in costs), sum_costs(c.cost for c in costs)
    total = None if panel_cost is None or judge_cost is None else panel_cost + judge_cost
    rows = [("panel", panel.input_tokens, panel.output_tokens, panel.calls, format_usd(panel_cost))]
    rows += [(f"judge {c.judge_model} ({c.rubric})", c.usage.input_tokens, c.usage.output_tokens, c.usage.calls,
              format_usd(c.cost)) for c in costs]
    rows += [("judges", judges.input_tokens, judges.output_tokens, judges.calls, format_usd(judge_cost)),
             ("panel + judges", panel.input_tokens + judges.input_tokens, panel.output_tokens + judges.output_tokens,
              panel.calls + judges.calls, format_usd(total))]
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return ("<h2>Cost</h2><table class=\"cost\"><thead><tr><th>who</th><th>input tokens</th><th>output tokens</th>"
            f"<th>calls</th><th>cost</th></tr></thead><tbody>{body}</tbody></table>")


def _error(arm: Arm) -> str:
    row = arm.row
    if arm.completed:
        return ""
    stage = f" at {row.failed_stage}" if row.failed_stage else ""
    return f'<p class="error failed">Failed{esc(stage)}: {esc(row.error or "no error recorded")}</p>'


def arm_body(run: int, folder: RunFolder, arm: Arm) -> str:
    """The arm page's body (the trace and its judgement records are read here, once per request)."""
    row = arm.row
    title = f"{row.case_id} · {row.protocol} · {row.format} · {arm.model} · {row.status}"
    nav = (f'<nav><a href="/runs/{run}/">cohort index</a><a href="{esc(case_link(run, row.case_id))}">'
           f"case {esc(row.case_id)}</a></nav>")
    head = f"<h1>{esc(title)}</h1>{nav}{_error(arm)}"
    if arm.trace is None or not arm.trace.is_file():
        return head + "<p class=\"muted\">This arm left no trace (it failed before its first record).</p>"
    trace = folder.read_trace(arm.trace)
    judgements = sorted((j for _, j in folder.judgements_of(arm.trace)), key=lambda j: j.rubric)
    case = Case.model_validate(trace.case)
    blocks = "".join(_block(block) for block in protocol_of(trace).view(trace))
    if trace.error and arm.completed:
        head += f'<p class="error failed">Error: {esc(trace.error)}</p>'
    return (head + f"<p class=\"muted\">{esc(folder.relative(arm.trace))}</p><h2>Case</h2>{_pre(case.render())}"
            f"{reference_section(case, trace)}<section class=\"protocol\">{blocks}</section>"
            f"{_judgements(judgements)}{_cost(trace, judgements)}")
