"""The percentile bootstrap, plain and case-clustered, under the package's one seeding rule
(:mod:`consilium.stats`): a generator seeded by the user's seed and the name of what is resampled.

The case-clustered bootstrap resamples whole clusters (cases) with replacement, each resample keeping every
value of a drawn case, its estimate the mean over the values it holds (npcbench.txt, C.2 "Confidence
intervals": cluster bootstrap, 2.5th and 97.5th percentiles; ai-consilium.txt Fig. 3b: cases).
"""

from __future__ import annotations

import statistics
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["bootstrap", "case_draws", "cluster_bootstrap", "generator", "percentile_interval"]


def generator(seed: int, key: str) -> np.random.Generator:
    """The one way a bootstrap here is seeded: ``default_rng([seed mod 2**64, crc32(key)])``."""
    import numpy as np  # on use: the command line's parser never loads numpy

    return np.random.default_rng([seed % 2**64, zlib.crc32(key.encode("utf-8"))])


def case_draws(cases: int, *, draws: int, seed: int, key: str) -> np.ndarray:
    """``draws`` resamples of ``cases`` clusters with replacement, as indices into them (a ``draws`` ×
    ``cases`` array; empty with no case or no draw): for a caller whose statistic is not a mean (κ, α) and
    that computes it over each resample itself."""
    import numpy as np  # on use: the command line's parser never loads numpy

    if not cases or not draws:
        return np.empty((0, 0), dtype=int)
    return generator(seed, key).integers(0, cases, size=(draws, cases))


def percentile_interval(estimates: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """The 95 % percentile interval of a bootstrap's estimates: their 2.5th and 97.5th percentiles (numpy's
    linear interpolation)."""
    import numpy as np  # on use: the command line's parser never loads numpy

    low, high = np.percentile(np.asarray(estimates, dtype=float), [2.5, 97.5])
    return float(low), float(high)


def cluster_bootstrap(clusters: Mapping[str, Sequence[float]], *, draws: int, seed: int,
                      key: str) -> tuple[float | None, float | None]:
    """The 95 % percentile interval (unrounded) of the mean of all values, resampling the clusters that hold
    a value with replacement ``draws`` times (sorted by name, drawn by :func:`case_draws`); (None, None)
    with no value or no draw."""
    import numpy as np  # on use: the command line's parser never loads numpy

    names = sorted(c for c, values in clusters.items() if len(values))
    picks = case_draws(len(names), draws=draws, seed=seed, key=key)
    if not picks.size:
        return None, None
    sums = np.array([float(sum(clusters[c])) for c in names])
    counts = np.array([len(clusters[c]) for c in names], dtype=float)
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = percentile_interval(means)
    # An end that differs from the estimate by float noise only (every cluster alike) is the estimate, so
    # that callers may take ``estimate - low`` and ``high - estimate`` as error bars.
    estimate = statistics.fmean(v for c in names for v in clusters[c])
    noise = 1e-12 * max(1.0, abs(estimate))
    return (estimate if abs(low - estimate) <= noise else low), (estimate if abs(high - estimate) <= noise else high)


def bootstrap(values: Sequence[float], *, draws: int, seed: int, key: str) -> tuple[float | None, float | None]:
    """The 95 % percentile interval of the mean of independent ``values``: each value its own cluster, in the
    given order."""
    width = len(str(len(values)))
    return cluster_bootstrap({f"{i:0{width}d}": [v] for i, v in enumerate(values)}, draws=draws, seed=seed,
                             key=key)
