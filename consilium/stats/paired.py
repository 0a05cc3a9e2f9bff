"""Tests on paired differences (one per case): the Wilcoxon signed-rank test, the matched-pairs
rank-biserial correlation, and Holm's step-down adjustment of a family's p-values (docs/ablations.md,
"Statistics").

Differences are rounded to :data:`DECIMALS` first, so that float noise (a mean of means) is never a
difference; zero differences are dropped before ranking (``zero_method="wilcox"``), and with every
difference zero neither the test nor the correlation is defined (None).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DECIMALS", "holm", "rank_biserial", "wilcoxon"]

DECIMALS = 10


def _nonzero(differences: Sequence[float]) -> list[float]:
    return [d for d in (round(x, DECIMALS) for x in differences) if d != 0]


def rank_biserial(differences: Sequence[float]) -> float | None:
    """r = (W+ − W−) / (W+ + W−), the signed ranks of |d| over the non-zero differences (ties averaged)."""
    from scipy.stats import rankdata  # on use: the command line's parser never loads scipy

    nonzero = _nonzero(differences)
    if not nonzero:
        return None
    ranks = rankdata([abs(d) for d in nonzero])
    plus = float(sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0))
    minus = float(sum(r for r, d in zip(ranks, nonzero, strict=True) if d < 0))
    return (plus - minus) / (plus + minus)


def wilcoxon(differences: Sequence[float]) -> tuple[float | None, float | None]:
    """Wilcoxon's (W, p): ``scipy.stats.wilcoxon``, two-sided, ``method="auto"``; W is the smaller of W+ and
    W−. (None, None) when every difference is zero."""
    from scipy.stats import wilcoxon as test  # on use: the command line's parser never loads scipy

    rounded = [round(x, DECIMALS) for x in differences]
    if not _nonzero(rounded):
        return None, None
    result = test(rounded, zero_method="wilcox", alternative="two-sided", method="auto")
    return float(result.statistic), float(result.pvalue)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's adjusted p-values, in the given order: the i-th smallest of m times (m − i + 1), made
    non-decreasing and capped at 1; a None (not testable) stays None and is not counted in m."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[i] = running
    return adjusted
