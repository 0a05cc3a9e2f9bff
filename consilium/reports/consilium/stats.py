"""The descriptive statistics of the AI Consilium tables, and the case-clustered bootstrap.

ai-consilium.txt reports means with the population SD (Table 9 says so; Tables 6, 8 and 13–20 agree
with it to the last digit, e.g. Table 18's 2.937 ± 0.243 over 190 scores of 2 and 3), percentages
of a count, and 95 % intervals from a bootstrap that resamples whole clusters (Fig. 3b: cases).
"""

from __future__ import annotations

import statistics
import zlib
from collections.abc import Mapping, Sequence

__all__ = ["DIGITS", "POOLED", "cluster_bootstrap", "mean_sd", "number", "percent"]

#: Decimals kept in the tables' numbers (the Markdown shows three).
DIGITS = 6
#: The ``model`` of a row that pools every model.
POOLED = "pooled"


def number(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


def mean_sd(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and population SD (None for no values)."""
    if not values:
        return None, None
    return number(statistics.fmean(values)), number(statistics.pstdev(values))


def percent(count: int, total: int) -> float | None:
    return number(100 * count / total) if total else None


def cluster_bootstrap(clusters: Mapping[str, Sequence[float]], *, draws: int, seed: int,
                      key: str) -> tuple[float, float]:
    """The 95 % percentile interval (unrounded) of the mean of all values, resampling whole clusters
    with replacement ``draws`` times. The generator is seeded by ``seed`` and ``key`` (the row's name), so
    a row's interval does not depend on which other rows a table has."""
    import numpy as np  # on use: the command line's parser never loads numpy

    names = sorted(clusters)
    sums = np.array([sum(clusters[c]) for c in names], dtype=float)
    counts = np.array([len(clusters[c]) for c in names], dtype=float)
    rng = np.random.default_rng([seed % 2**64, zlib.crc32(key.encode("utf-8"))])
    picks = rng.integers(0, len(names), size=(draws, len(names)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = (float(x) for x in np.percentile(means, [2.5, 97.5]))
    # Unrounded, and an end that differs from the estimate by float noise only (every cluster alike)
    # is the estimate, so that callers may take ``estimate - low`` and ``high - estimate`` as error bars.
    values = [v for c in names for v in clusters[c]]
    estimate = statistics.fmean(values)  # as callers compute it, to the last bit
    noise = 1e-12 * max(1.0, abs(estimate))
    return (estimate if abs(low - estimate) <= noise else low), (estimate if abs(high - estimate) <= noise else high)
