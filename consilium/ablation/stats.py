"""Paired statistics of ablated − original, one value per case (docs/ablations.md, "Statistics").

Each case gives one difference: the mean over its ablated arms of that comparison (its replicates, and under
leave-one-out its roles of one category) of ablated − original, so a case weighs the same whatever its
replicates, as the house's paired differences do (consilium/reports/consilium/paired.py). Then:

- the mean paired difference, and its 95 % case-clustered bootstrap interval (cases resampled with
  replacement; consilium.reports.consilium.stats.cluster_bootstrap);
- the matched-pairs rank-biserial correlation r = (W+ − W−) / (W+ + W−), the signed ranks of |d| over the
  non-zero differences (ties averaged);
- the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``, ``zero_method="wilcox"``: zero differences are
  dropped before ranking; two-sided; ``method="auto"``); with every difference zero the test is not testable
  (no p, and so no Holm p: it enters no family);
- Holm's step-down adjustment across the comparisons of one family.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from consilium.reports.consilium.stats import cluster_bootstrap

__all__ = ["NOT_TESTABLE", "Paired", "holm", "paired", "rank_biserial", "wilcoxon"]

#: Differences are rounded to this many decimals first, so float noise (a mean of means) is never a difference.
DECIMALS = 10
NOT_TESTABLE = "not testable: every difference is zero"


@dataclass(frozen=True)
class Paired:
    cases: int
    mean_original: float
    mean_ablated: float
    mean_difference: float
    ci_low: float
    ci_high: float
    rank_biserial: float | None
    statistic: float | None  #: Wilcoxon's W, the smaller of W+ and W− (scipy's two-sided statistic)
    p: float | None
    note: str


def _nonzero(differences: Sequence[float]) -> list[float]:
    return [d for d in (round(x, DECIMALS) for x in differences) if d != 0]


def rank_biserial(differences: Sequence[float]) -> float | None:
    """(W+ − W−) / (W+ + W−) over the non-zero differences; None when every difference is zero."""
    from scipy.stats import rankdata

    nonzero = _nonzero(differences)
    if not nonzero:
        return None
    ranks = rankdata([abs(d) for d in nonzero])
    plus = float(sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0))
    minus = float(sum(r for r, d in zip(ranks, nonzero, strict=True) if d < 0))
    return (plus - minus) / (plus + minus)


def wilcoxon(differences: Sequence[float]) -> tuple[float | None, float | None]:
    """Wilcoxon's (W, p) on the differences, as documented above; (None, None) when not testable."""
    from scipy.stats import wilcoxon as test

    rounded = [round(x, DECIMALS) for x in differences]
    if not _nonzero(rounded):
        return None, None
    result = test(rounded, zero_method="wilcox", alternative="two-sided", method="auto")
    return float(result.statistic), float(result.pvalue)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's adjusted p-values, in the given order; a None (not testable) stays None and is not counted."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[i] = running
    return adjusted


def paired(original: Mapping[str, float], ablated: Mapping[str, float], *, draws: int, seed: int,
           key: str) -> Paired:
    """The statistics of one comparison: case → its original and its ablated value (the same cases)."""
    cases = sorted(original)
    differences = {c: ablated[c] - original[c] for c in cases}
    low, high = cluster_bootstrap({c: [d] for c, d in differences.items()}, draws=draws, seed=seed, key=key)
    statistic, p = wilcoxon([differences[c] for c in cases])
    return Paired(cases=len(cases), mean_original=statistics.fmean(original[c] for c in cases),
                  mean_ablated=statistics.fmean(ablated[c] for c in cases),
                  mean_difference=statistics.fmean(differences.values()), ci_low=low, ci_high=high,
                  rank_biserial=rank_biserial(list(differences.values())), statistic=statistic, p=p,
                  note="" if p is not None else NOT_TESTABLE)
