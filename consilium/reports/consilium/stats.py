"""The descriptive statistics of the AI Consilium tables.

ai-consilium.txt reports means with the population SD (Table 9 says so; Tables 6, 8 and 13–20 agree
with it to the last digit, e.g. Table 18's 2.937 ± 0.243 over 190 scores of 2 and 3), percentages
of a count, and 95 % intervals from a bootstrap that resamples whole clusters (Fig. 3b: cases;
:func:`consilium.stats.cluster_bootstrap`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["DIGITS", "POOLED", "mean_sd", "number", "percent"]

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
