"""What a judge scores in a trace: the texts of its components, which the trace's protocol gives.

From ai-consilium.txt, Table 10 and Table 29: *role_reasoning* is the primary
role's structured opinion without its final conclusion, *role_opinion* is that
final conclusion alone (both exist only in the structured format), and
*conclusion* is the final report. A board's *conclusion* is its board
conclusion; a Specialist Turn's *answer* is its answer; the single-specialist
baseline's answer is its *conclusion*. *differential* is the final report's
ranked differential, one candidate per item, judged after the report's leading
diagnosis (its final opinion), which is rank 1.

A Specialist Turn is judged against the reference expert answer to its own question
(opentumorboard.txt §2.4 L58, App. C.1 L170): :func:`turn_reference` takes it from the case's
``reference.answers``, matched to the turn's question, or from ``--reference-answer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from consilium.cases.model import Case
from consilium.graphs.registry import protocol_of
from consilium.traces.schema import TraceBase

__all__ = ["TurnReference", "component_texts", "leading_diagnosis", "missing_turn_reference", "ranked_candidates",
           "ranked_differential", "turn_reference"]

#: A list number ("1." or "2)") where an item may start: not inside a number ("1.5") or a word.
_MARK = re.compile(r"(?<![\w.,])(\d{1,2})[.)](?!\d)")
_LEAD = re.compile(r"^\s*(?:\d{1,2}[.)](?!\d)|[-*•])\s*")


def _cut_numbered(text: str) -> list[str]:
    """Cut at the list numbers 1, 2, 3… found in that order, so an inline "1. A 2. B 3. C" is three
    items; a number out of sequence ("grade 3.") is text, and fewer than two numbers cut nothing."""
    marks, expected = [], 1
    for match in _MARK.finditer(text):
        if int(match.group(1)) == expected:
            marks.append(match)
            expected += 1
    if len(marks) < 2:
        return [text]
    ends = [m.start() for m in marks[1:]] + [len(text)]
    head = text[:marks[0].start()]
    return [head, *(text[m.end():end] for m, end in zip(marks, ends, strict=True))]


def ranked_differential(text: str, limit: int = 10) -> list[str]:
    """Candidates of a differential in the order given: split on list numbers (at line starts or inline),
    lines, bullets or semicolons. Commas never split: "Glioblastoma, IDH-wildtype" is one diagnosis
    (neural-medbench.txt L249, pass@5 counts diagnoses, not their parts). A heading line ending in ":"
    is not a candidate."""
    pieces = [piece for part in _cut_numbered(text) for line in part.splitlines() for piece in line.split(";")]
    items = [_LEAD.sub("", p).strip(" .,\t\u00a0") for p in pieces]
    return [p for p in items if len(p) > 1 and not p.endswith(":")][:limit]


def _same_diagnosis(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())
    return norm(a) == norm(b)


def leading_diagnosis(trace: TraceBase) -> str | None:
    """The answer's most likely diagnosis, as its protocol names it: the structured final report's final opinion
    (the task asks for "your most likely diagnosis, differential diagnoses", neural-medbench.txt L403); None
    without one."""
    return protocol_of(trace).leading_diagnosis(trace)


def ranked_candidates(leading: str | None, differential: str, k: int) -> list[tuple[str, str]]:
    """(source, candidate) in rank order for pass@k: the leading diagnosis first (pass@1 is the
    single best guess, neural-medbench.txt L249, L282), then the differential's items, the first
    dropped when it restates the leading diagnosis; the differential alone without a leading one."""
    items = ranked_differential(differential, k + 1)
    if not leading:
        return [("final_differential", item) for item in items[:k]]
    if items and _same_diagnosis(items[0], leading):
        items = items[1:]
    return [("final_opinion", leading), *(("final_differential", item) for item in items)][:k]


def component_texts(trace: TraceBase) -> dict[str, str]:
    """Component name → text, for the components this trace has (a failed run may have none), as its
    protocol gives them (consilium/graphs/*/protocol.py, ``components``)."""
    return protocol_of(trace).components(trace)


@dataclass(frozen=True)
class TurnReference:
    """The reference answer a Specialist Turn is judged and overlapped against, and where it is from:
    ``reference.answers.N`` (the case's answer to the turn's question) or ``--reference-answer``."""

    text: str
    source: str


def turn_reference(trace: TraceBase, case: Case, given: str | None) -> TurnReference | None:
    """A turn's reference answer: the case's answer to its question put to its role
    (:meth:`Reference.answer_to`, exact after whitespace and case normalisation). ``given``
    (``--reference-answer``) stands in only for a case without ``reference.answers``: a case that lists
    its answers and none for this question makes the turn not evaluable, never judged against another
    question's answer. For another trace, ``given`` alone."""
    asked = protocol_of(trace).question(trace)
    if asked is not None and case.reference is not None and case.reference.answers:
        match = case.reference.answer_to(*asked)
        return TurnReference(match[1], f"reference.answers.{match[0]}") if match is not None else None
    return TurnReference(given, "--reference-answer") if given else None


def missing_turn_reference(case: Case) -> str:
    """Why a turn has no reference answer, when neither the case nor --reference-answer gives one."""
    answers = case.reference.answers if case.reference else []
    if not answers:
        return "the case has no reference answer"
    return (f"the case has no reference answer to this turn's question put to this role (none of the "
            f"{len(answers)} in reference.answers matches it, ignoring case and spacing; --reference-answer "
            "stands in only for a case without reference.answers)")
