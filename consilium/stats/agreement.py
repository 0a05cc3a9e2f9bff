"""How far raters agree: the one implementation of Krippendorff's α, Cohen's κ and percent agreement that
both the jury's judges (consilium/reports/jury_agreement.py) and the judge against physicians
(consilium/calibration/agreement.py) are measured with.

* :func:`krippendorff_alpha`: the ``krippendorff`` package, ordinal level for an ordinal scale and nominal
  for a binary one, on reliability data (a row per rater, a column per unit, NaN where a rater gave none);
* :func:`cohen_kappa`: scikit-learn ``cohen_kappa_score`` over the scale's points as labels, quadratic
  weights for an ordinal scale (a weight is the squared distance of two points' ranks on the scale);
* :func:`percent_agreement`: within each unit of two ratings or more, the share of its pairs of ratings
  that are equal, averaged over those units (each unit once: Fleiss's observed agreement P̄).

A statistic that is undefined on its data (no expected disagreement: every rating the same) is None,
never NaN; the callers say why in their tables.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["cohen_kappa", "krippendorff_alpha", "percent_agreement"]


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def krippendorff_alpha(reliability_data: np.ndarray, *, binary: bool,
                       domain: Sequence[float] | None = None) -> float | None:
    """Krippendorff's α of ``reliability_data`` (raters × units, NaN missing; a unit with fewer than two
    ratings is not pairable and counts in no coincidence): nominal when ``binary``, else ordinal; over
    ``domain`` (the scale's points) when given, else the values the data hold (the ordinal and nominal
    metrics weigh a point no one gave by nothing, so both give the same α). None where α is undefined."""
    import krippendorff
    import numpy as np  # on use: the command line's parser never loads numpy

    try:
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _finite(krippendorff.alpha(reliability_data=reliability_data,
                                              level_of_measurement="nominal" if binary else "ordinal",
                                              value_domain=None if domain is None else list(domain)))
    except (ValueError, ZeroDivisionError):  # one value in the domain: no expected disagreement
        return None


def cohen_kappa(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, labels: Sequence[int], *,
                binary: bool) -> float | None:
    """Cohen's κ of two raters' scores of the same units (``a[i]`` and ``b[i]`` of unit i) over the scale's
    points ``labels``: quadratic-weighted for an ordinal scale, unweighted for a binary one (on two points
    they are the same). None where κ is undefined (every score the same)."""
    from sklearn.metrics import cohen_kappa_score

    if len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _finite(cohen_kappa_score([int(x) for x in a], [int(y) for y in b], labels=list(labels),
                                         weights=None if binary else "quadratic"))


def percent_agreement(units: Sequence[Sequence[object]]) -> float | None:
    """Within each unit of two values or more, the share of its pairs of values that are equal; the mean
    over those units (Fleiss's P̄, each unit once); None when no unit has two values."""
    shares = []
    for values in units:
        m = len(values)
        if m >= 2:
            shares.append(sum(n * (n - 1) for n in Counter(values).values()) / (m * (m - 1)))
    return sum(shares) / len(shares) if shares else None
