"""The repetition and overlength penalties of the App. E.2 format score, with the constants of the authors'
reward code (AnqiLi24/OpenTumorBoard ``training/verl_otb/reward.py``).

Repetition is read on the last 2,048 tokens (runs of letters and digits, an inner apostrophe or hyphen kept,
CJK characters one each; lower-cased). Two signals: the longest run of one block of 1–8 tokens repeated back
to back, and the share of the tail covered by its most frequent 4-gram (count × 4 / tail length, at most 1).
A loop is detected when the run reaches 8, or the 4-gram occurs at least 12 times and covers at least 15%;
it is severe (the response fails) at a run of 128 or a share of 50%. The penalty of a detected loop is the
larger of two ramps: run 8 → 128 and share .15 → .50, each clipped to [0, 1].

Overlength: with the response's valid length L (tokens) and the ramp from 6,144 to min(8,192, the length
limit when one is given), the penalty is (L − 6,144) / (end − 6,144) clipped to [0, 1]; when the end is at or
below 6,144 it is 1 at or past the end, else 0. No length, no penalty.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

TAIL_TOKENS = 2048
OVERLONG_START, OVERLONG_END = 6144, 8192
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)?|[一-鿿]")


@dataclass(frozen=True)
class Repetition:
    detected: bool
    longest_run: int
    ngram_share: float

    @property
    def severe(self) -> bool:
        return self.detected and (self.ngram_share >= 0.5 or self.longest_run >= 128)

    @property
    def penalty(self) -> float:
        if not self.detected:
            return 0.0
        return max(ramp(self.longest_run, 8.0, 128.0), ramp(self.ngram_share, 0.15, 0.5))


def ramp(value: float, start: float, end: float) -> float:
    return min(1.0, max(0.0, (value - start) / (end - start)))


def _longest_run(tail: list[str]) -> int:
    """The most times one block of 1–8 tokens repeats back to back; a scan per width that jumps past each
    run it measures."""
    longest = 1
    if len(tail) < 8:
        return longest
    for width in range(1, 9):
        at = 0
        while at + 2 * width <= len(tail):
            block, run = tail[at:at + width], 1
            while tail[at + run * width:at + (run + 1) * width] == block:
                run += 1
            longest = max(longest, run)
            at += run * width
    return longest


def repetition(text: str) -> Repetition:
    tail = [t.casefold() for t in _TOKEN.findall(text)][-TAIL_TOKENS:]
    run = _longest_run(tail)
    count, share = 0, 0.0
    if len(tail) >= 4:
        count = max(Counter(tuple(tail[i:i + 4]) for i in range(len(tail) - 3)).values())
        share = min(1.0, count * 4 / len(tail))
    return Repetition(detected=run >= 8 or (count >= 12 and share >= 0.15), longest_run=run, ngram_share=share)


def overlong_penalty(length: int | None, limit: int | None) -> float:
    if length is None:
        return 0.0
    end = OVERLONG_END if limit is None else min(OVERLONG_END, limit)
    if end <= OVERLONG_START:
        return float(length >= end)
    return ramp(length, OVERLONG_START, end)
