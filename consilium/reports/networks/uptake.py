"""Whether a revision took up a dissent's requested change: a judge's yes/no (the ``dissent-uptake`` rubric,
consilium/judges/rubrics/analysis/) or, with no judge model, the word-overlap rule below (docs/networks.md).

Word overlap: the request's content words (lower-cased ``\\w+`` tokens, stop words and request verbs removed,
single characters dropped) are compared with the revision's *new* words, those of the revised report that
the previous version did not have. The share of content words found among them is the overlap; a share of
at least :data:`OVERLAP_THRESHOLD` counts as taken up. A dissent no revision followed (the run stopped:
round limit or no change) was not taken up, whatever the method.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from consilium.agents.records import Report
from consilium.graphs.consilium.trace import Trace

__all__ = ["OVERLAP_THRESHOLD", "STOP_WORDS", "Dissent", "Method", "Uptake", "content_words", "dissents_of",
           "overlap_share", "word_overlap"]

#: The share of the request's content words that must be new in the revision for it to count as taken up.
OVERLAP_THRESHOLD = 0.5

_STOP_TEXT = """
a an the and or nor but if then else of to in on at by for from with without into onto over under about as
is are was were be been being am do does did done has have had having it its this that these those there here
which who whom whose what when where why how all any both each few more most other some such no not only own
same so than too very can could will would shall should may might must also just please i we you he she they
me us him her them my our your their report version
add adding added include including included consider considering mention mentioning state stating specify
clarify change changing revise revising remove removing delete replace update recommend recommending
suggest need needs needed use using make making give giving list note
"""
#: English function words, and the verbs a request is phrased with ("add CT": the content is "ct").
STOP_WORDS = frozenset(_STOP_TEXT.split())

_WORD = re.compile(r"\w+")

Method = Literal["judge", "word_overlap", "no_revision"]


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that carry content: not stop words, not single characters."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOP_WORDS}


def overlap_share(request: str, before: str, after: str) -> float:
    """The share of the request's content words that are in ``after`` and not in ``before`` (0 for a
    request without content words), rounded to 4 decimals."""
    wanted = content_words(request)
    if not wanted:
        return 0.0
    new = set(_WORD.findall(after.lower())) - set(_WORD.findall(before.lower()))
    return round(len(wanted & new) / len(wanted), 4)


@dataclass(frozen=True)
class Dissent:
    """One dissenting vote, the report it reviewed and the revision that followed its round (None: none)."""

    round: int
    role: str
    reason: str
    requested_change: str
    before: Report
    after: Report | None

    @property
    def request(self) -> str:
        """What the dissent asked for: its requested change, else its reason."""
        return self.requested_change or self.reason

    @property
    def key(self) -> str:
        return f"r{self.round}:{self.role}"


@dataclass(frozen=True)
class Uptake:
    taken_up: bool
    method: Method
    overlap: float
    rationale: str = ""


def dissents_of(trace: Trace) -> list[Dissent]:
    """Every dissent of the trace's rounds, in round and panel order."""
    by_version = {r.version: r for r in trace.reports}
    found = []
    for rnd in trace.rounds:
        before = by_version.get(rnd.report_version)
        if before is None:
            continue
        after = by_version.get(rnd.report_version + 1)
        after = after if after is not None and after.round == rnd.round else None
        found += [Dissent(rnd.round, v.role, v.reason, (v.requested_change or "").strip(), before, after)
                  for v in rnd.votes if v.vote == "dissent"]
    return found


def word_overlap(dissent: Dissent) -> Uptake:
    """The fallback decision (module docstring)."""
    if dissent.after is None:
        return Uptake(False, "no_revision", 0.0)
    share = overlap_share(dissent.request, dissent.before.text, dissent.after.text)
    return Uptake(share >= OVERLAP_THRESHOLD, "word_overlap", share)
