"""The board transcript format shared by both board modes (opentumorboard.txt, App. B.2):

    <discussion>
    <turn 1> Moderator: ...
    <turn 2> Medical Oncologist: ...
    </discussion>
    <conclusion>...</conclusion>

One turn per line, numbered from 1; the conclusion is 2–4 sentences in the third person.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ABBREVIATIONS", "TURN_LINE", "TURN_TAG", "Transcript", "Turn", "clean_role", "one_line", "parse_transcript",
           "split_sentences"]

TURN_LINE = re.compile(r"^<turn (\d+)> ([^:<>\n]+?): (\S.*)$")
#: Turn markup anywhere in a line, spaced or cased loosely: a second turn on one line or a turn in the conclusion.
TURN_TAG = re.compile(r"<\s*/?\s*turn\b[^>]*>", re.IGNORECASE)
_BLOCKS = re.compile(r"<discussion>(.*?)</discussion>\s*<conclusion>(.*?)</conclusion>", re.DOTALL)
# A sentence ends at . ! or ? (and any closing quote or bracket) followed by whitespace and a letter,
# digit, quote or bracket; a lower-case start still starts a sentence (E.2 counts sentences, not style).
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(\s+)(?=[\"'(\[\w])")
# Abbreviations whose full stop does not end a sentence ("Dr. Smith", "e.g. a PET"), matched on the word
# before the stop, case-insensitively. "etc." and single initials are not listed: both often end a sentence
# ("... stage I. The board ...").
ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "vs", "e.g", "i.e", "cf", "approx", "fig", "figs",
                           "al", "ca", "resp", "incl"})
_LAST_WORD = re.compile(r"([\w.]+)\.[\"')\]]*$")


def one_line(text: str) -> str:
    """Collapse whitespace, so a turn stays on its line."""
    return " ".join(text.split())


def clean_role(label: str) -> str:
    """A role name fit for a turn line: no colon, angle brackets or line breaks."""
    return one_line(re.sub(r"[:<>]", " ", label)) or "Other"


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (whitespace collapsed); a stop after a listed abbreviation does not split."""
    flat = one_line(text)
    sentences: list[str] = []
    start = 0
    for end in _SENTENCE_END.finditer(flat):
        head = flat[start:end.start(1)]
        word = _LAST_WORD.search(head)
        if word and word.group(1).lower() in ABBREVIATIONS:
            continue
        sentences.append(head)
        start = end.end(1)
    sentences.append(flat[start:])
    return [s.strip() for s in sentences if s.strip()]


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int
    role: str
    text: str
    addressed_to: str | None = None
    #: agents mode (trace schema 1.3): how a specialist got the floor, "asked" by the moderator's turn before
    #: or "passed" it without a moderator turn to reply directly to another specialist; null otherwise.
    floor: Literal["asked", "passed"] | None = None
    #: the earlier specialist turn this turn replies to, where the moderator named one.
    responds_to: int | None = None


class Transcript(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[Turn]
    conclusion: str

    def render(self) -> str:
        lines = [f"<turn {t.number}> {clean_role(t.role)}: {one_line(t.text)}" for t in self.turns]
        return "<discussion>\n" + "\n".join(lines) + "\n</discussion>\n" + \
            f"<conclusion>{one_line(self.conclusion)}</conclusion>"


def parse_transcript(text: str) -> Transcript | None:
    """The turns and conclusion of a transcript text, leniently (lines that are not turns are
    skipped); None when the two blocks are not there. :mod:`validate` judges the format."""
    match = _BLOCKS.search(text)
    if match is None:
        return None
    turns = []
    for line in match.group(1).splitlines():
        found = TURN_LINE.match(line.strip())
        if found:
            turns.append(Turn(number=int(found.group(1)), role=found.group(2).strip(), text=found.group(3).strip()))
    return Transcript(turns=turns, conclusion=match.group(2).strip())
