"""Intervals of a proportion: Wilson's score interval and the exact Clopper–Pearson interval; and the t
interval of a mean.

``successes`` may be a sum of case means (a case's replicates averaged first), n·p̂ over the n cases; both
intervals then read p̂ = successes / n. (None, None) when n is 0: no proportion, no interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["clopper_pearson", "t_interval", "wilson"]


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float | None, float | None]:
    """Wilson's score interval, unrounded; z = 1.96 (95 %) as neural-medbench.txt (Confidence Intervals)
    states, so every table that shows one agrees."""
    if n == 0:
        return None, None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def clopper_pearson(successes: float, n: int, level: float = 0.95) -> tuple[float | None, float | None]:
    """The exact binomial interval, unrounded, as npcbench.txt App. C.2.3 gives for Strict: the beta
    quantiles B(α/2; x, n − x + 1) and B(1 − α/2; x + 1, n − x), 0 at x = 0 and 1 at x = n."""
    from scipy.stats import beta  # on use: the command line's parser never loads scipy

    if n == 0:
        return None, None
    alpha = 1 - level
    low = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.ppf(1 - alpha / 2, successes + 1, n - successes))
    return low, high


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float | None, float | None]:
    """The t interval of the mean of ``values``: mean ± t(1 − α/2; n − 1) · s / √n with the sample SD s;
    (None, None) for fewer than two values."""
    from scipy.stats import t  # on use: the command line's parser never loads scipy

    n = len(values)
    if n < 2:
        return None, None
    mean = statistics.fmean(values)
    half = float(t.ppf(1 - (1 - level) / 2, n - 1)) * statistics.stdev(values) / math.sqrt(n)
    return mean - half, mean + half
