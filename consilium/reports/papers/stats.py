"""Small statistics shared by the paper tables: means, percentages, Wilson intervals and the
case-clustered percentile bootstrap."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from consilium.judges.scoring import wilson_interval

__all__ = ["DIGITS", "cluster_bootstrap", "count", "mean", "pct", "rate", "sd", "wilson"]

DIGITS = 4  # every mean, rate and interval bound is rounded to this many decimals


def mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), DIGITS) if values else None


def sd(values: Sequence[float]) -> float | None:
    """Population standard deviation (as the papers' mean ± SD); None for no value."""
    return round(statistics.pstdev(values), DIGITS) if values else None


def rate(count: float, total: int) -> float | None:
    return round(count / total, DIGITS) if total else None


def pct(count: float, total: int) -> float | None:
    return round(100 * count / total, 2) if total else None


def count(value: float) -> int | float:
    """A count that may be a sum of case means (a case's replicates averaged): an int when it is whole to
    the tables' precision (ten cases of 0.1 sum to 0.9999999999999999 in floating point: that is 1)."""
    rounded = round(float(value), DIGITS)
    return int(rounded) if rounded.is_integer() else rounded


def wilson(successes: float, n: int) -> tuple[float | None, float | None]:
    """95 % Wilson score interval with z = 1.96, as neural-medbench.txt (Confidence Intervals) states.
    ``successes`` is n·p̂, so a proportion averaged over each case's replicates (not a whole count) has
    its interval over the n cases."""
    if n == 0:
        return None, None
    low, high = wilson_interval(successes, n, z=1.96)
    return round(low, DIGITS), round(high, DIGITS)


def cluster_bootstrap(clusters: Mapping[str, Sequence[float]], draws: int, seed: int) -> tuple[float | None,
                                                                                          float | None]:
    """Percentile 95 % interval of the mean over all values, resampling whole clusters (cases) with
    replacement, ``draws`` times from ``numpy.random.default_rng(seed)``: each resample keeps every value
    of a drawn case, and its estimate is the mean over the values it holds (npcbench.txt, C.2
    "Confidence intervals": cluster bootstrap, 2.5th and 97.5th percentiles). A fresh generator per
    call, so one group's interval does not depend on which groups came before it."""
    import numpy as np  # on use: the command line's parser never loads numpy

    keys = sorted(k for k, v in clusters.items() if len(v))
    if not keys:
        return None, None
    sums = np.array([float(sum(clusters[k])) for k in keys])
    counts = np.array([len(clusters[k]) for k in keys])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(keys), size=(draws, len(keys)))
    estimates = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(estimates, [2.5, 97.5])
    return round(float(low), DIGITS), round(float(high), DIGITS)
