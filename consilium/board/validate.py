"""The format checks of a board transcript (opentumorboard.txt, App. E.2) and its format scores.

E.2 names the checks: the two blocks in order, turn-line syntax, consecutive
numbering, at least two roles with the moderator speaking first, a conclusion
of two to four sentences, and no stray whitespace. Here the roles check is
split in two (at least two roles; moderator first) and the last check also
refuses text outside the blocks, so there are seven. ``exact`` is 1 only when
every check holds; ``dense`` gives partial credit, which E.2 does not weight,
so each check counts equally (passed / 7). ``score`` is E.2's
``0.25·dense + 0.75·exact − overlength penalty`` (0 up to 6,144 response tokens,
rising linearly to 1 at 8,192), floored at −1. E.2's repetition penalty gives no
n-gram size or coefficients, so it is not applied.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from consilium.board.transcript import TURN_LINE, split_sentences

__all__ = ["CHECKS", "Check", "FormatReport", "overlength_penalty", "validate_transcript"]

CHECKS = ("blocks_in_order", "turn_line_syntax", "consecutive_numbering", "at_least_two_roles",
          "moderator_first", "conclusion_two_to_four_sentences", "no_stray_text")
_SHAPE = re.compile(r"\A<discussion>\n(?P<body>.*?)\n?</discussion>\n<conclusion>(?P<conclusion>.*?)</conclusion>\Z",
                    re.DOTALL)
_LOOSE = re.compile(r"<discussion>(?P<body>.*?)</discussion>\s*<conclusion>(?P<conclusion>.*?)</conclusion>",
                    re.DOTALL)


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    passed: bool
    detail: str = ""


class FormatReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    checks: list[Check]
    dense: float
    exact: int
    overlength_penalty: float
    score: float

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]


def overlength_penalty(response_tokens: int | None) -> float:
    if not response_tokens or response_tokens <= 6144:
        return 0.0
    return min(1.0, (response_tokens - 6144) / (8192 - 6144))


def _turn_checks(body: str) -> list[Check]:
    lines = body.split("\n") if body else []
    matches = [TURN_LINE.match(line) for line in lines]
    bad = [i + 1 for i, m in enumerate(matches) if m is None]
    turns = [m for m in matches if m is not None]
    numbers = [int(m.group(1)) for m in turns]
    roles = [m.group(2).strip() for m in turns]
    expected = list(range(1, len(numbers) + 1))
    return [
        Check(name="turn_line_syntax", passed=bool(lines) and not bad,
              detail=f"lines {bad[:5]} of the discussion are not '<turn N> Role: text'" if bad else
              ("" if lines else "the discussion has no turns")),
        Check(name="consecutive_numbering", passed=bool(numbers) and numbers == expected,
              detail="" if numbers == expected and numbers else f"turn numbers {numbers[:8]} are not 1, 2, 3, …"),
        Check(name="at_least_two_roles", passed=len({r.lower() for r in roles}) >= 2,
              detail="" if len({r.lower() for r in roles}) >= 2 else f"roles: {sorted(set(roles))}"),
        Check(name="moderator_first", passed=bool(roles) and roles[0].lower() == "moderator",
              detail="" if roles and roles[0].lower() == "moderator" else
              f"turn 1 is {roles[0] if roles else 'missing'}"),
    ]


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
    checks.append(Check(name="conclusion_two_to_four_sentences", passed=2 <= sentences <= 4,
                        detail="" if 2 <= sentences <= 4 else f"the conclusion has {sentences} sentence(s)"))
    stray = strict is None or conclusion != conclusion.strip() or "  " in text or \
        any(line != line.strip() for line in body.split("\n"))
    checks.append(Check(name="no_stray_text", passed=not stray,
                        detail="text or whitespace outside the format" if stray else ""))
    passed = sum(c.passed for c in checks)
    dense = round(passed / len(checks), 6)
    exact = int(passed == len(checks))
    penalty = overlength_penalty(response_tokens)
    return FormatReport(checks=checks, dense=dense, exact=exact, overlength_penalty=penalty,
                        score=round(max(-1.0, 0.25 * dense + 0.75 * exact - penalty), 6))
