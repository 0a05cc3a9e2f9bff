"""A per-case quantity over a group's arms, each case's replicates averaged first: the one rule by which
the judge's summary and every paper table count replicates (consilium/reports/papers/per_case.py).

The statistic is the mean over the cases of each case's mean over its replicates whose value is known;
its interval is over the cases (Wilson's n is the number of cases), so replicates never count as
independent cases. Without replicates (one arm per case) this is the plain per-case statistic.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CaseValues", "case_values"]


@dataclass(frozen=True)
class CaseValues:
    """A per-case quantity over one group's cases, a case's replicates averaged first."""

    means: dict[str, float]  # case → the mean of its replicates' known values
    arms: int  # the arms (replicates) whose value is known, in ``means``
    unknown: int  # the arms whose value is not known (not evaluable); a case with none known is not in ``means``

    @property
    def cases(self) -> int:
        return len(self.means)

    @property
    def total(self) -> float:
        """The sum of the case means: the number of successes when each case has one arm."""
        return sum(self.means.values())


def case_values(values: Iterable[tuple[str, float | None]]) -> CaseValues:
    """(case, value or None) per arm → :class:`CaseValues`."""
    by_case: dict[str, list[float | None]] = defaultdict(list)
    for case, value in values:
        by_case[case].append(value)
    means = {case: statistics.fmean(known) for case, found in sorted(by_case.items())
             if (known := [v for v in found if v is not None])}
    unknown = sum(v is None for found in by_case.values() for v in found)
    arms = sum(len(found) for found in by_case.values()) - unknown
    return CaseValues(means, arms, unknown)
