"""Which scores of a rubric's scale are points and which one says "out of scope".

The four-decision rubric's scale holds −1 for "the reference decides nothing here" (opentumorboard.txt
App. C.3 L184-186; ``Rubric.scale``: "-1 means out of scope where the rubric allows it"). That score is no
point of the ordinal scale: every statistic that reads scores as points (the jury's α, κ, self-preference
and length bias; the judge's agreement with physicians, its calibration maps) reads the in-scope scores
only, through :func:`in_scope`, and reports agreement on scope apart. One definition for all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from consilium.judges.rubric import Rubric

__all__ = ["OUT_OF_SCOPE", "in_scope", "out_of_scope_score", "scale_points"]

#: The score a rubric's scale may hold for "out of scope".
OUT_OF_SCOPE = -1


def out_of_scope_score(rubric: Rubric) -> int | None:
    """The rubric's out-of-scope score, None when its scale has none."""
    return OUT_OF_SCOPE if OUT_OF_SCOPE in rubric.scale else None


def scale_points(rubric: Rubric) -> list[int]:
    """The points a score is read on: the rubric's scale without its out-of-scope score, in order. A frozen
    scope's own in-scope scores (``Rubric.frozen_scale``: the authors' reward code's 0) are the reward protocol's,
    not the points physicians rate on, so agreement and calibration read the scale's points alone."""
    return sorted(s for s in rubric.scale if s != out_of_scope_score(rubric))


def in_scope(score: float | None, rubric: Rubric) -> float | None:
    """``score`` when it is a point of the scale; None when not evaluable (None) or out of scope."""
    return None if score is None or score == out_of_scope_score(rubric) else score
