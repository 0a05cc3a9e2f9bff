"""The App. E.2 format score of a Board Simulation response (opentumorboard.txt App. E.2), as the authors'
reward code computes it (AnqiLi24/OpenTumorBoard ``training/verl_otb/reward.py``, ``format_details``).

The score fails closed: a truncated response, a severe repetition loop or a response with neither block
scores −1, one with only one block −0.75, whatever its other checks say. Otherwise the score is the
serialization's base score minus the repetition and overlength penalties, floored at −1. The failure
reasons are numbered as the official code numbers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from consilium.otb.penalties import Repetition, overlong_penalty, repetition
from consilium.otb.serialization import Serialization, conclusion_of, discussion_of, serialization


class Failure(IntEnum):
    NONE = 0
    TRUNCATED = 1
    REPETITION = 2
    NO_BLOCKS = 3
    ONE_BLOCK = 4


@dataclass(frozen=True)
class FormatScore:
    """Every quantity of the official ``format_details``, under its official name in :meth:`fields`."""

    serialization: Serialization
    repetition: Repetition
    failure: Failure
    overlong_penalty: float
    truncated: bool
    length: int | None
    limit: int | None

    @property
    def failure_penalty(self) -> float:
        return {Failure.NONE: 0.0, Failure.ONE_BLOCK: -0.75}.get(self.failure, -1.0)

    @property
    def score(self) -> float:
        if self.failure:
            return self.failure_penalty
        return max(-1.0, self.serialization.base - self.repetition.penalty - self.overlong_penalty)

    def fields(self) -> dict[str, float]:
        s, r = self.serialization, self.repetition
        blocks_found = s.checks["format_blocks"] == 1.0
        return {
            "format_score": self.score,
            "format_base_score": s.base,
            "format_dense_score": s.dense,
            "format_exact": s.exact,
            **s.checks,
            "format_turn_count": float(s.turn_count),
            "format_role_count": float(s.role_count),
            "format_conclusion_sentence_count": float(s.sentences),
            "format_dialogue_roles": float(s.roles_vary),
            "format_moderator_first": float(s.moderator_first),
            "format_dialogue_structure": (float(s.roles_vary) + float(s.moderator_first)) / 2,
            "format_repetition_detected": float(r.detected),
            "format_repetition_max_run": float(r.longest_run),
            "format_repetition_ngram_fraction": r.ngram_share,
            "format_failure_penalty": self.failure_penalty,
            "format_failure_reason": float(self.failure),
            "format_complete": float(blocks_found),
            "response_truncated": float(self.truncated),
            "format_severe_repetition": float(r.severe),
            "format_repetition_penalty": r.penalty,
            "format_overlong_penalty": self.overlong_penalty,
            "valid_response_length": float(self.length or 0),
            "response_length_limit": float(self.limit or 0),
        }


def format_score(text: str, *, truncated: bool = False, length: int | None = None,
                 limit: int | None = None) -> FormatScore:
    """Score one response; ``length`` is its valid length in tokens and ``limit`` the generation's budget,
    both as the trace records them (None when unknown: no overlength penalty)."""
    loop = repetition(text)
    has_discussion, has_conclusion = discussion_of(text) is not None, conclusion_of(text) is not None
    if truncated:
        failure = Failure.TRUNCATED
    elif loop.severe:
        failure = Failure.REPETITION
    elif not has_discussion and not has_conclusion:
        failure = Failure.NO_BLOCKS
    elif not has_discussion or not has_conclusion:
        failure = Failure.ONE_BLOCK
    else:
        failure = Failure.NONE
    return FormatScore(serialization=serialization(text), repetition=loop, failure=failure,
                       overlong_penalty=overlong_penalty(length, limit), truncated=truncated, length=length,
                       limit=limit)
