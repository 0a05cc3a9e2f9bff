"""Small statistics shared by the paper tables: means, percentages, counts, and their rounding (the
intervals themselves come from :mod:`consilium.stats`)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["DIGITS", "count", "mean", "pct", "rate", "rounded", "sd"]

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


def rounded(bounds: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """An interval of :mod:`consilium.stats` (Wilson, Clopper–Pearson, the bootstrap) to the tables'
    precision."""
    return tuple(None if b is None else round(b, DIGITS) for b in bounds)  # type: ignore[return-value]
