"""The serialization part of the App. E.2 format score (opentumorboard.txt App. E.2), with the weights and
rules of the authors' reward code (``training/verl_otb/reward.py`` in AnqiLi24/OpenTumorBoard), which
produced the published numbers.

A Board Simulation response is one ``<discussion>`` block of ``<turn N> Role: text`` lines, then a one-line
``<conclusion>``. Six checks are scored, each in [0, 1], and weighted:

=============================  ======  ==========================================================
check                          weight  credit
=============================  ======  ==========================================================
blocks                         .2500   half for exactly one non-empty discussion, half for the conclusion
envelope                       .1875   the whole text is exactly ``<discussion>\\n…\\n</discussion>\\n<conclusion>…``
turn syntax                    .1875   the fraction of discussion lines that are turn lines
turn numbering                 .1875   the fraction of turn lines whose number is their position (1, 2, …)
conclusion sentences           .1250   1 for 2–4 sentences, .5 for 1 or 5, else 0
no outer whitespace            .0625   the text is non-empty and equals itself stripped
=============================  ======  ==========================================================

``dense`` is the weighted sum; ``exact`` is 1 when there is a turn line and every check scores 1; the base
score is ``.25·dense + .75·exact``. Role variety and a moderator-first turn are reported, not scored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WEIGHTS: dict[str, float] = {
    "format_blocks": 0.25,
    "format_envelope": 0.1875,
    "format_turn_syntax": 0.1875,
    "format_turn_numbering": 0.1875,
    "format_conclusion_sentences": 0.125,
    "format_no_outer_whitespace": 0.0625,
}

_DISCUSSION = re.compile(r"<discussion>\s*(?P<body>.*?)\s*</discussion>", re.DOTALL)
_CONCLUSION = re.compile(r"<conclusion>\s*(?P<body>.*?)\s*</conclusion>", re.DOTALL)
_ENVELOPE = re.compile(r"\A<discussion>\n.*?\n</discussion>\n<conclusion>[^\n]+</conclusion>\Z", re.DOTALL)
_TURN = re.compile(r"^<turn (?P<number>[1-9]\d*)> (?P<role>[^:\n<>]+): .+$")
# A sentence ends at . ! or ? (closing quotes may follow) before whitespace or the end, except after the
# titles Mr, Ms, Dr and after a single capital letter (an initial).
_SENTENCE_END = re.compile(r"(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\b[A-Z])[.!?](?:[\"'”]*)?(?=\s|$)")


def only_block(pattern: re.Pattern[str], text: str) -> str | None:
    """The stripped body of the block when the text holds exactly one and it is not empty, else None."""
    found = [m.group("body").strip() for m in pattern.finditer(text)]
    return found[0] if len(found) == 1 and found[0] else None


def discussion_of(text: str) -> str | None:
    return only_block(_DISCUSSION, text)


def conclusion_of(text: str) -> str | None:
    return only_block(_CONCLUSION, text)


def sentence_count(text: str) -> int:
    return len(_SENTENCE_END.findall(text.strip()))


@dataclass(frozen=True)
class Serialization:
    """The six scored checks and what is reported beside them."""

    checks: dict[str, float]
    turn_count: int
    role_count: int
    sentences: int
    roles_vary: bool
    moderator_first: bool

    @property
    def dense(self) -> float:
        return sum(WEIGHTS[name] * value for name, value in self.checks.items())

    @property
    def exact(self) -> float:
        return float(self.turn_count > 0 and all(abs(v - 1.0) < 1e-12 for v in self.checks.values()))

    @property
    def base(self) -> float:
        return 0.25 * self.dense + 0.75 * self.exact


def serialization(text: str) -> Serialization:
    discussion, conclusion = discussion_of(text), conclusion_of(text)
    lines = discussion.splitlines() if discussion is not None else []
    turns = [m for line in lines if (m := _TURN.fullmatch(line)) is not None]
    roles = [m.group("role").strip() for m in turns]
    numbering = sum(int(m.group("number")) == i for i, m in enumerate(turns, 1)) / len(turns) if turns else 0.0
    sentences = sentence_count(conclusion) if conclusion is not None else 0
    checks = {
        "format_blocks": 0.5 * (discussion is not None) + 0.5 * (conclusion is not None),
        "format_envelope": float(_ENVELOPE.fullmatch(text) is not None),
        "format_turn_syntax": len(turns) / len(lines) if lines else 0.0,
        "format_turn_numbering": numbering,
        "format_conclusion_sentences": 1.0 if 2 <= sentences <= 4 else 0.5 if sentences in (1, 5) else 0.0,
        "format_no_outer_whitespace": float(bool(text) and text == text.strip()),
    }
    return Serialization(checks=checks, turn_count=len(turns), role_count=len(set(roles)), sentences=sentences,
                         roles_vary=len(set(roles)) >= 2,
                         moderator_first=bool(roles) and roles[0].casefold() == "moderator")
