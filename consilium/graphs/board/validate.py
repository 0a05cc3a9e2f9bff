"""The format checks of a board transcript (opentumorboard.txt, App. E.2) and its format scores.

E.2 names the checks: the two blocks in order, turn-line syntax, consecutive
numbering, at least two roles with the moderator speaking first, a conclusion
of two to four sentences, and no stray whitespace. Here the roles check is
split in two (at least two roles; moderator first) and the last check also
refuses text outside the blocks, so there are seven. ``exact`` is 1 only when
every check holds; ``dense`` gives partial credit, which E.2 does not weight,
so each check counts equally (passed / 7). ``score`` is E.2's
``0.25·dense + 0.75·exact − repetition penalty − overlength penalty`` (the latter
0 up to 6,144 response tokens, rising linearly to 1 at 8,192), floored at −1.
E.2 gives the repetition penalty's shape (linear in the longest repeated run and
the repeated n-gram fraction) but not its constants; ours are in
:mod:`consilium.graphs.board.repetition`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from consilium.graphs.board.repetition import Repetition, measure_repetition, repetition_penalty
from consilium.graphs.board.transcript import TURN_LINE, TURN_TAG, parse_transcript, split_sentences

__all__ = ["CHECKS", "Check", "FormatReport", "overlength_penalty", "validate_transcript"]

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
#: overlength count and the stricter turn-line and sentence rules (App. E.2).
FORMAT_RULES = "2"


class FormatReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    checks: list[Check]
    dense: float
    exact: int
    overlength_penalty: float
    score: float
    # Added with format rules "2"; traces written before it read with no penalty and no measures.
    repetition_penalty: float = 0.0
    repetition: Repetition | None = None
    #: Which version of the checks made this report: "1" for traces older than schema 1.2 (set when they
    #: are read, consilium/traces/versions.py); such a trace reads but no longer replays (traces/retired.py).
    rules: str = FORMAT_RULES

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]


def overlength_penalty(response_tokens: int | None) -> float:
    if not response_tokens or response_tokens <= 6144:
        return 0.0
    return min(1.0, (response_tokens - 6144) / (8192 - 6144))


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


def validate_transcript(text: str, *, response_tokens: int | None = None) -> FormatReport:
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
    passed = sum(c.passed for c in checks)
    dense = round(passed / len(checks), 6)
    exact = int(passed == len(checks))
    penalty = overlength_penalty(response_tokens)
    repetition = _repetition(text)
    repeats = repetition_penalty(repetition)
    return FormatReport(checks=checks, dense=dense, exact=exact, overlength_penalty=penalty,
                        repetition_penalty=repeats, repetition=repetition,
                        score=round(max(-1.0, 0.25 * dense + 0.75 * exact - repeats - penalty), 6))


def _repetition(text: str) -> Repetition:
    parsed = parse_transcript(text)
    if parsed is None:  # no blocks to read turns from: the words of the whole text
        return measure_repetition([], re.sub(r"<[^<>\n]*>", " ", text))
    return measure_repetition([t.text for t in parsed.turns], parsed.conclusion)
