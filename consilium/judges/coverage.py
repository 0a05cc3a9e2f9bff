"""How much of each rubric was judged: per (rubric, component), the items judged and not evaluable,
with the commonest reasons, so a rubric that could not be applied never just drops out of the tables.

``cohort --judge``, ``judge``, ``compare`` and ``report`` all print this; a rubric whose every item
is not evaluable is also a warning on stderr (and makes ``judge`` exit 1).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any, TextIO

from consilium.judges.record import Judgement

__all__ = [
    "coverage_of",
    "coverage_table",
    "coverage_warnings",
    "judging_coverage",
    "print_coverage",
    "shortened_input",
    "wholly_not_evaluable",
]

#: An outcome as the coverage counts it: (rubric, component, not_evaluable, reason), and optionally
#: whether the item was judged on a shortened input (a whole-case record cut to fit the context).
Outcome = tuple[str, str, bool, str | None] | tuple[str, str, bool, str | None, bool]

TOP_REASONS = 3
_REASON_CHARS = 240
NO_REASON = "(no reason recorded)"


def _short(reason: str | None) -> str:
    text = " ".join((reason or NO_REASON).split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


def coverage_of(outcomes: Iterable[Outcome], rubrics: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Per (rubric, component), sorted: ``items``, ``judged``, ``not_evaluable``, ``shortened`` (items
    judged on a whole-case record shortened to fit the judge's context) and ``reasons`` (the commonest
    not-evaluable reasons, commonest first, as ``[reason, count]``). A rubric named in ``rubrics`` with
    no item at all gets a row with component ``-`` and 0 items."""
    counts: dict[tuple[str, str], Counter[str]] = {}
    totals: Counter[tuple[str, str]] = Counter()
    cut: Counter[tuple[str, str]] = Counter()
    for outcome in outcomes:
        rubric, component, not_evaluable, reason = outcome[:4]
        key = (rubric, component)
        totals[key] += 1
        cut[key] += bool(outcome[4]) if len(outcome) > 4 else 0
        reasons = counts.setdefault(key, Counter())
        if not_evaluable:
            reasons[_short(reason)] += 1
    seen = {rubric for rubric, _ in totals}
    rows: list[dict[str, Any]] = []
    for rubric, component in sorted(totals):
        reasons = counts[(rubric, component)]
        missing = sum(reasons.values())
        rows.append({"rubric": rubric, "component": component, "items": totals[(rubric, component)],
                     "judged": totals[(rubric, component)] - missing, "not_evaluable": missing,
                     "shortened": cut[(rubric, component)],
                     "reasons": [[text, n] for text, n in reasons.most_common(TOP_REASONS)]})
    for rubric in sorted(set(rubrics) - seen):
        rows.append({"rubric": rubric, "component": "-", "items": 0, "judged": 0, "not_evaluable": 0,
                     "shortened": 0, "reasons": []})
    return rows


def shortened_input(detail: dict[str, Any]) -> str:
    """For an item judged on a whole-case record cut to fit the context: ``kept/total`` characters of
    the stages shortened (consilium/judges/whole_case.py); "" when nothing was cut."""
    cuts = (detail.get("whole_case_input") or {}).get("shortened") or []
    if not cuts:
        return ""
    return f"{sum(c['kept_chars'] for c in cuts)}/{sum(c['total_chars'] for c in cuts)}"


def judging_coverage(judgements: Iterable[Judgement], rubrics: Iterable[str] = ()) -> list[dict[str, Any]]:
    """:func:`coverage_of` over the items of judgement records. Records of several protocols (a consilium's and
    a single specialist's) are counted apart, each row naming its ``protocol``: never pooled."""
    by_protocol: dict[str, list[Judgement]] = {}
    for judgement in judgements:
        by_protocol.setdefault(judgement.trace_kind, []).append(judgement)
    if len(by_protocol) <= 1:
        return _coverage([j for group in by_protocol.values() for j in group], rubrics)
    return [{"protocol": protocol, **row} for protocol, group in sorted(by_protocol.items())
            for row in _coverage(group, rubrics)]


def _coverage(judgements: list[Judgement], rubrics: Iterable[str]) -> list[dict[str, Any]]:
    rows = coverage_of(((j.rubric, i.component, i.not_evaluable, i.reason, bool(shortened_input(i.detail)))
                        for j in judgements for i in j.items), rubrics)
    left_out: Counter[tuple[str, str]] = Counter()  # a jury's judges that could not evaluate an item
    for judgement in (j for j in judgements if j.jury):
        for item in judgement.items:
            left_out[(judgement.rubric, item.component)] += item.verdict.not_evaluable if item.verdict else 0
    for row in rows:
        if any(j.jury and j.rubric == row["rubric"] for j in judgements):
            row["jury_votes_left_out"] = left_out[(row["rubric"], row["component"])]
    return rows


def wholly_not_evaluable(rows: list[dict[str, Any]]) -> list[str]:
    """Rubrics of which nothing was judged: every item not evaluable, or no item at all."""
    judged: Counter[str] = Counter()
    for row in rows:
        judged[row["rubric"]] += row["judged"]
    return sorted(rubric for rubric in judged if judged[rubric] == 0)


def coverage_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per rubric of which nothing was judged, naming its commonest reason."""
    lines = []
    for rubric in wholly_not_evaluable(rows):
        mine = [r for r in rows if r["rubric"] == rubric]
        items = sum(r["items"] for r in mine)
        if not items:
            lines.append(f"warning: rubric {rubric}: no items to judge (no completed trace was judged)")
            continue
        reasons: Counter[str] = Counter()
        for row in mine:
            reasons.update({text: n for text, n in row["reasons"]})
        lines.append(f"warning: rubric {rubric}: all {items} items not evaluable "
                     f"(commonest reason: {reasons.most_common(1)[0][0]})")
    return lines


def coverage_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows flattened for a Markdown or CSV table: the reasons as ``reason ×n; …``."""
    return [{"rubric": r["rubric"], "component": r["component"], "items": r["items"], "judged": r["judged"],
             "not_evaluable": r["not_evaluable"], "shortened": r.get("shortened", 0),
             "commonest_reasons": "; ".join(f"{text} ×{n}" for text, n in r["reasons"]),
             # a jury's judges that could not evaluate an item, left out of its verdict (docs/judges.md, Juries)
             **({"jury_votes_left_out": r["jury_votes_left_out"]} if "jury_votes_left_out" in r else {})}
            for r in rows]


def print_coverage(rows: list[dict[str, Any]], out: TextIO | None = None, err: TextIO | None = None) -> bool:
    """The coverage on ``out`` (stdout), a warning per wholly not-evaluable rubric on ``err`` (stderr).
    True when some rubric was wholly not evaluable."""
    out, err = out or sys.stdout, err or sys.stderr
    if not rows:
        return False
    print("judging coverage (per rubric and component: items judged, not evaluable, commonest reasons)", file=out)
    for row in rows:
        reasons = "; ".join(f"{text} ×{n}" for text, n in row["reasons"])
        cut = row.get("shortened", 0)
        protocol = f"{row['protocol']:<10} " if "protocol" in row else ""
        print(f"  {protocol}{row['rubric']:<24} {row['component']:<15} {row['items']} items: {row['judged']} judged, "
              f"{row['not_evaluable']} not evaluable" + (f", {cut} on a shortened whole-case record" if cut else "")
              + (f", {row['jury_votes_left_out']} jury votes not evaluable (left out of their verdicts)"
                 if "jury_votes_left_out" in row else "")
              + (f" ({reasons})" if reasons else ""), file=out)
    warnings = coverage_warnings(rows)
    for line in warnings:
        print(line, file=err)
    return bool(warnings)
