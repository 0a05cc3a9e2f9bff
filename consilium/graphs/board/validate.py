"""The format checks of a board transcript (opentumorboard.txt, App. E.2) and its official format score.

The numbers (``dense``, ``exact``, ``score``, the repetition and overlength penalties and the failure reason) are
the App. E.2 format score as the authors' reward code computes it (:mod:`consilium.otb.format_score`: six
weighted checks, fractional credit, fail-closed penalties for a truncated response, a severe loop, no block or a
single block), fed the truncation flag and the response's length and length limit from the trace. Every field of
the official ``format_details`` is kept in ``official``.

The seven ``checks`` are the diagnostics the viewer shows: which rule a transcript broke and why, in E.2's
words (the two blocks in order, turn-line syntax, consecutive numbering, at least two roles, the moderator
first, a conclusion of two to four sentences, no stray text). They are stricter than the official checks
(roles and moderator-first are reported, not scored, officially; a doubled space is stray here, not there), so a
failed check need not lower the score; a single-mode transcript is repaired until they all pass.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from consilium.graphs.board.repetition import Repetition
from consilium.graphs.board.transcript import TURN_LINE, TURN_TAG, split_sentences
from consilium.otb.format_score import format_score

__all__ = ["CHECKS", "FAILURES", "FORMAT_RULES", "Check", "FormatReport", "diagnostics", "validate_transcript"]

CHECKS = ("blocks_in_order", "turn_line_syntax", "consecutive_numbering", "at_least_two_roles",
          "moderator_first", "conclusion_two_to_four_sentences", "no_stray_text")
_SHAPE = re.compile(r"\A<discussion>\n(?P<body>.*?)\n?</discussion>\n<conclusion>(?P<conclusion>.*?)</conclusion>\Z",
                    re.DOTALL)
# Whitespace other than the space and the line break (tabs, carriage returns, non-breaking and other Unicode
# spaces) and the invisible format characters that pass for nothing: all stray (E.2 "no stray whitespace").
_ODD_SPACE = re.compile(r"[^\S \n]|[\u200b-\u200d\u2060\ufeff]")
_CONCLUSION_ROLE = re.compile(r"(?i)^(?:(?:the|final|board|board's)\s+)*(?:conclusion|consensus)$")
_LOOSE = re.compile(r"<discussion>(?P<body>.*?)</discussion>\s*<conclusion>(?P<conclusion>.*?)</conclusion>",
                    re.DOTALL)


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    passed: bool
    detail: str = ""


#: The version of the format checks and score: 2 added the repetition penalty, the final-transcript
#: overlength count and the stricter turn-line and sentence rules (App. E.2); 3 takes the numbers from the
#: official format score (consilium/otb/format_score.py), the checks staying as diagnostics.
FORMAT_RULES = "3"


#: The official failure reasons (consilium/otb/format_score.py Failure), as the viewer names them.
FAILURES: dict[int, str] = {1: "truncated", 2: "severe repetition", 3: "no block", 4: "one block only"}


class FormatReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    checks: list[Check]
    dense: float
    exact: int
    overlength_penalty: float
    score: float
    # Added with format rules "2"; traces written before it read with no penalty and no measures.
    repetition_penalty: float = 0.0
    #: Rules "2"'s own repetition measures (consilium/graphs/board/repetition.py); None from rules "3" on, whose
    #: measures are the official ones in ``official``.
    repetition: Repetition | None = None
    # Added with format rules "3"; older reports read with 0 and no official fields.
    #: The official failure reason: 0 none, 1 truncated, 2 severe repetition, 3 no block, 4 one block.
    failure_reason: int = 0
    #: Every field of the official ``format_details`` (consilium.otb.format_score.FormatScore.fields).
    official: dict[str, float] | None = None
    #: Which version of the checks made this report: "1" for traces older than schema 1.2 (set when they
    #: are read, consilium/traces/versions.py); such a trace reads but no longer replays (traces/retired.py).
    rules: str = FORMAT_RULES

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]


def _turn_line(line: str) -> tuple[re.Match[str] | None, str]:
    """The turn a discussion line holds, or None with why it is not one turn line."""
    found = TURN_LINE.match(line)
    if found is None:
        return None, "not '<turn N> Role: text'"
    if TURN_TAG.search(found.group(3)):
        return None, "two turns on one line"
    if _CONCLUSION_ROLE.match(found.group(2).strip()):
        return None, "the conclusion written as a turn"
    return found, ""


def _turn_checks(body: str) -> list[Check]:
    lines = body.split("\n") if body else []
    parsed = [_turn_line(line) for line in lines]
    matches = [m for m, _ in parsed]
    bad = [f"{i + 1} ({why})" for i, (m, why) in enumerate(parsed) if m is None]
    turns = [m for m in matches if m is not None]
    numbers = [int(m.group(1)) for m in turns]
    roles = [m.group(2).strip() for m in turns]
    expected = list(range(1, len(numbers) + 1))
    return [
        Check(name="turn_line_syntax", passed=bool(lines) and not bad,
              detail=f"discussion lines {', '.join(bad[:5])}" if bad else
              ("" if lines else "the discussion has no turns")),
        Check(name="consecutive_numbering", passed=bool(numbers) and numbers == expected,
              detail="" if numbers == expected and numbers else f"turn numbers {numbers[:8]} are not 1, 2, 3, …"),
        Check(name="at_least_two_roles", passed=len({r.lower() for r in roles}) >= 2,
              detail="" if len({r.lower() for r in roles}) >= 2 else f"roles: {sorted(set(roles))}"),
        Check(name="moderator_first", passed=bool(roles) and roles[0].lower() == "moderator",
              detail="" if roles and roles[0].lower() == "moderator" else
              f"turn 1 is {roles[0] if roles else 'missing'}"),
    ]


def _stray(text: str, shaped: bool, conclusion: str, body: str) -> str:
    """Why the text has stray text or whitespace ("" when it has none)."""
    if not shaped:
        return "text or line breaks outside the two blocks"
    odd = _ODD_SPACE.search(text)
    if odd:
        return f"whitespace other than spaces and line breaks ({odd.group()!r})"
    if "  " in text:
        return "doubled spaces"
    if conclusion != conclusion.strip() or any(line != line.strip() for line in body.split("\n")):
        return "a padded line or conclusion"
    return ""


def validate_transcript(text: str, *, truncated: bool = False, response_tokens: int | None = None,
                        length_limit: int | None = None) -> FormatReport:
    """The diagnostics and the official format score of ``text``: ``truncated`` whether the response was cut off
    (its final call's finish reason), ``response_tokens`` its length and ``length_limit`` the generation's
    budget, in tokens, as the trace records them (None: unknown, no overlength penalty)."""
    official = format_score(text, truncated=truncated, length=response_tokens, limit=length_limit)
    fields = official.fields()
    return FormatReport(checks=diagnostics(text), dense=official.serialization.dense,
                        exact=int(official.serialization.exact), overlength_penalty=official.overlong_penalty,
                        repetition_penalty=official.repetition.penalty, failure_reason=int(official.failure),
                        score=official.score, official=fields)


def diagnostics(text: str) -> list[Check]:
    """The seven checks, each with why it failed."""
    strict = _SHAPE.match(text)
    loose = strict or _LOOSE.search(text)
    blocks = text.count("<discussion>") == 1 and text.count("<conclusion>") == 1 and loose is not None
    checks = [Check(name="blocks_in_order", passed=blocks,
                    detail="" if blocks else "expected one <discussion> block followed by one <conclusion> block")]
    body = loose.group("body").strip("\n") if loose else ""
    conclusion = loose.group("conclusion") if loose else ""
    checks += _turn_checks(body)
    sentences = len(split_sentences(conclusion)) if conclusion.strip() else 0
    as_turn = TURN_TAG.search(conclusion) is not None
    checks.append(Check(name="conclusion_two_to_four_sentences", passed=2 <= sentences <= 4 and not as_turn,
                        detail="the conclusion is written as a turn line" if as_turn else
                        "" if 2 <= sentences <= 4 else f"the conclusion has {sentences} sentence(s)"))
    stray = _stray(text, strict is not None, conclusion, body)
    checks.append(Check(name="no_stray_text", passed=not stray, detail=stray))
    return checks
