"""Paired statistics of ablated − original, one value per case (docs/ablations.md, "Statistics").

Each case gives one difference: the mean over its ablated arms of that comparison (its replicates, and under
leave-one-out its roles of one category) of ablated − original, so a case weighs the same whatever its
replicates, as the house's paired differences do (consilium/reports/consilium/paired.py). Then:

- the mean paired difference, and its 95 % case-clustered bootstrap interval (cases resampled with
  replacement; :func:`consilium.stats.cluster_bootstrap`, seeded by the seed and the comparison's name);
- the matched-pairs rank-biserial correlation r = (W+ − W−) / (W+ + W−), the signed ranks of |d| over the
  non-zero differences (ties averaged);
- the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``, ``zero_method="wilcox"``: zero differences are
  dropped before ranking; two-sided; ``method="auto"``); with every difference zero the test is not testable
  (no p, and so no Holm p: it enters no family);
- Holm's step-down adjustment across the comparisons of one family.

The rank-biserial correlation, the test and Holm's adjustment are :mod:`consilium.stats`'s.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from consilium.stats import cluster_bootstrap, rank_biserial, wilcoxon

__all__ = ["NOT_TESTABLE", "Paired", "paired"]

NOT_TESTABLE = "not testable: every difference is zero"


@dataclass(frozen=True)
class Paired:
    cases: int
    mean_original: float
    mean_ablated: float
    mean_difference: float
    ci_low: float | None
    ci_high: float | None
    rank_biserial: float | None
    statistic: float | None  #: Wilcoxon's W, the smaller of W+ and W− (scipy's two-sided statistic)
    p: float | None
    note: str


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
