"""The repetition measures of a board transcript and the format score's repetition penalty.

opentumorboard.txt App. E.2 subtracts "a repetition penalty that rises linearly with the longest
repeated run and the repeated n-gram fraction" but gives neither the n-gram size nor the constants;
those below are ours (docs/board.md, "Repetition penalty"). Words are the lower-cased ``\\w+`` tokens
of the turn texts and the conclusion, in order (markup and role labels left out). A turn *repeats*
when its words equal those of an earlier turn, whoever spoke; the *longest repeated run* is the
longest stretch of consecutive turns that each repeat one before them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

__all__ = ["NGRAM", "RUN_FREE", "RUN_FULL", "SHARE_FREE", "SHARE_FULL", "Repetition", "measure_repetition",
           "repetition_penalty"]

#: n-gram size of the repeated n-gram share.
NGRAM = 4
#: The run term is 0 up to RUN_FREE repeated turns in a row and rises linearly to 1 at RUN_FULL.
RUN_FREE, RUN_FULL = 1, 5
#: The n-gram term is 0 up to a repeated share of SHARE_FREE and rises linearly to 1 at SHARE_FULL.
SHARE_FREE, SHARE_FULL = 0.2, 0.6
#: Each term weighs half, so the penalty runs from 0 to 1 (E.2's overlength penalty has the same range).
RUN_WEIGHT, SHARE_WEIGHT = 0.5, 0.5

_WORD = re.compile(r"\w+")


class Repetition(BaseModel):
    """What :func:`measure_repetition` found; the parameters are recorded with it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ngram: int = NGRAM
    repeated_ngram_share: float
    repeated_turns: int
    longest_repeated_run: int


def _ramp(value: float, free: float, full: float) -> float:
    return min(1.0, max(0.0, (value - free) / (full - free)))


def measure_repetition(turn_texts: Sequence[str], conclusion: str = "") -> Repetition:
    words = [w for text in (*turn_texts, conclusion) for w in _WORD.findall(text.casefold())]
    grams = [tuple(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1)]
    share = (len(grams) - len(set(grams))) / len(grams) if grams else 0.0
    seen: set[tuple[str, ...]] = set()
    repeated = run = longest = 0
    for text in turn_texts:
        key = tuple(_WORD.findall(text.casefold()))
        if key and key in seen:
            repeated, run = repeated + 1, run + 1
            longest = max(longest, run)
        else:
            run = 0
        seen.add(key)
    return Repetition(repeated_ngram_share=round(share, 6), repeated_turns=repeated, longest_repeated_run=longest)


def repetition_penalty(measures: Repetition) -> float:
    """RUN_WEIGHT · run term + SHARE_WEIGHT · n-gram term, each a linear ramp clipped to [0, 1]."""
    return round(RUN_WEIGHT * _ramp(measures.longest_repeated_run, RUN_FREE, RUN_FULL)
                 + SHARE_WEIGHT * _ramp(measures.repeated_ngram_share, SHARE_FREE, SHARE_FULL), 6)
