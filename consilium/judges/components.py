"""What a judge scores in a trace: the texts of its components.

From ai-consilium.txt, Table 10 and Table 29: *role_reasoning* is the primary
role's structured opinion without its final conclusion, *role_opinion* is that
final conclusion alone (both exist only in the structured format), and
*conclusion* is the final report. A board's *conclusion* is its board
conclusion; a Specialist Turn's *answer* is its answer. *differential* is the
final report's ranked differential, one candidate per item.
"""

from __future__ import annotations

import re

from consilium.agents.records import render_sections
from consilium.traces.schema import BoardTrace, Trace, TurnTrace

__all__ = ["component_texts", "ranked_differential"]

_ITEM = re.compile(r"(?:^|\n|;)\s*(?:\d+[.)]|[-*•])?\s*")


def ranked_differential(text: str, limit: int = 10) -> list[str]:
    """Candidates of a differential in the order given: split on lines, numbers, bullets or semicolons."""
    parts = [p.strip(" .,") for p in _ITEM.split(text)]
    items = [p for p in parts if len(p) > 1]
    if len(items) <= 1 and "," in text:
        items = [p.strip(" .") for p in text.split(",") if p.strip(" .")]
    return items[:limit]


def component_texts(trace: Trace | BoardTrace | TurnTrace) -> dict[str, str]:
    """Component name → text, for the components this trace has (a failed run may have none)."""
    if isinstance(trace, TurnTrace):
        return {"answer": trace.answer} if trace.answer else {}
    if isinstance(trace, BoardTrace):
        return {"conclusion": trace.conclusion} if trace.conclusion else {}
    texts: dict[str, str] = {}
    if trace.final_report is not None:
        texts["conclusion"] = trace.final_report.text
        differential = (trace.final_report.sections or {}).get("final_differential")
        if differential:
            texts["differential"] = differential
    primary = next((r for r in trace.roles if r.primary), None)
    opinion = next((o for o in trace.opinions if primary and o.role == primary.id), None)
    if opinion is not None and opinion.sections:
        reasoning = {k: v for k, v in opinion.sections.items() if k != "final_conclusion"}
        texts["role_reasoning"] = render_sections(reasoning)
        texts["role_opinion"] = opinion.sections.get("final_conclusion", "")
    return {name: text for name, text in texts.items() if text.strip()}
