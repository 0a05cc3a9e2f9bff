"""Agreement between raters (consilium/stats/agreement.py): Krippendorff's α, Cohen's κ and percent agreement,
the one implementation that the jury's agreement among its judges and the judge's agreement with physicians
both use; every expected value here is computed by hand from the definitions."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from consilium.stats import cohen_kappa, krippendorff_alpha, percent_agreement

PACKAGE = Path(__file__).resolve().parents[2] / "consilium"
NAN = math.nan
#: Four raters × eight units of a 0-3 scale: missing ratings, units one rater rated (not pairable), a unit
#: nobody agreed on, and units everyone agreed on.
ORDINAL = np.array([
    [0, 1, 3, 2, NAN, 3, 1, 2],
    [0, 2, 3, 2, 1, NAN, NAN, 0],
    [1, 1, NAN, 3, 1, NAN, NAN, 2],
    [NAN, 1, 2, 2, 0, NAN, NAN, 3],
])
BINARY = np.array([
    [1, 0, 1, 1, NAN, 0],
    [1, 1, 1, 0, 0, NAN],
    [NAN, 0, 1, 1, 0, 1],
])


def _units(data: np.ndarray) -> list[list[float]]:
    return [[float(v) for v in column if not math.isnan(v)] for column in data.T]


def _alpha_by_hand(data: np.ndarray, delta: Callable[[dict[float, float], float, float], float]) -> float:
    """α = 1 − D_o / D_e from the coincidence matrix: each ordered pair of values within a unit of m ≥ 2
    ratings adds 1 / (m − 1) (Krippendorff 2011)."""
    coincidence: dict[tuple[float, float], float] = {}
    for values in _units(data):
        m = len(values)
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if m >= 2 and i != j:
                    coincidence[(a, b)] = coincidence.get((a, b), 0.0) + 1 / (m - 1)
    totals: dict[float, float] = {}
    for (a, _), count in coincidence.items():
        totals[a] = totals.get(a, 0.0) + count
    n = sum(totals.values())
    observed = sum(count * delta(totals, a, b) for (a, b), count in coincidence.items()) / n
    expected = sum(totals[a] * totals[b] * delta(totals, a, b) for a in totals for b in totals) / (n * (n - 1))
    return 1 - observed / expected


def _ordinal(totals: dict[float, float], a: float, b: float) -> float:
    low, high = min(a, b), max(a, b)
    return (sum(n for v, n in totals.items() if low <= v <= high) - (totals[low] + totals[high]) / 2) ** 2


def _nominal(totals: dict[float, float], a: float, b: float) -> float:
    return float(a != b)


def _kappa_by_hand(a: list[int], b: list[int], labels: list[int], quadratic: bool) -> float:
    n, size = len(a), len(labels)
    observed = [[sum(x == labels[i] and y == labels[j] for x, y in zip(a, b, strict=True)) / n
                 for j in range(size)] for i in range(size)]
    rows = [sum(r) for r in observed]
    cols = [sum(observed[i][j] for i in range(size)) for j in range(size)]
    weight = [[(i - j) ** 2 if quadratic else float(i != j) for j in range(size)] for i in range(size)]
    disagreement = sum(weight[i][j] * observed[i][j] for i in range(size) for j in range(size))
    chance = sum(weight[i][j] * rows[i] * cols[j] for i in range(size) for j in range(size))
    return 1 - disagreement / chance


def test_krippendorff_alpha_is_the_coincidence_matrix_alpha_ordinal_and_nominal() -> None:
    ordinal = _alpha_by_hand(ORDINAL, _ordinal)
    assert krippendorff_alpha(ORDINAL, binary=False) == pytest.approx(ordinal, abs=1e-9)
    # The scale's points as the domain: a point no one gave weighs nothing, so α is the same.
    assert krippendorff_alpha(ORDINAL, binary=False, domain=[0, 1, 2, 3, 4]) == pytest.approx(ordinal, abs=1e-9)
    assert krippendorff_alpha(BINARY, binary=True) == pytest.approx(_alpha_by_hand(BINARY, _nominal), abs=1e-9)
    # Ordinal is not interval: the two metrics differ on these data.
    interval = _alpha_by_hand(ORDINAL, lambda _, a, b: (a - b) ** 2)
    assert abs(ordinal - interval) > 1e-3
    # Undefined: every rating the same (no expected disagreement), with or without the scale as domain.
    same = np.array([[2, 2, NAN], [2, 2, 2]])
    assert krippendorff_alpha(same, binary=False) is None
    assert krippendorff_alpha(same, binary=False, domain=[0, 1, 2, 3]) is None


def test_cohen_kappa_is_quadratic_weighted_on_an_ordinal_scale_and_plain_on_a_binary_one() -> None:
    a, b = [0, 1, 3, 2, 2, 3, 1, 0], [0, 2, 3, 2, 1, 1, 1, 1]
    labels = [0, 1, 2, 3]
    assert cohen_kappa(a, b, labels, binary=False) == pytest.approx(_kappa_by_hand(a, b, labels, True), abs=1e-9)
    x, y = [1, 0, 1, 1, 0, 0, 1], [1, 1, 1, 0, 0, 0, 1]
    assert cohen_kappa(x, y, [0, 1], binary=True) == pytest.approx(_kappa_by_hand(x, y, [0, 1], False), abs=1e-9)
    # A point of the scale no one gave still counts as a distance on it (labels are the whole scale).
    c, d = [1, 2, 4, 2], [1, 4, 4, 1]
    assert cohen_kappa(c, d, [1, 2, 3, 4, 5], binary=False) == pytest.approx(
        _kappa_by_hand(c, d, [1, 2, 3, 4, 5], True), abs=1e-9)
    assert cohen_kappa([2, 2, 2], [2, 2, 2], labels, binary=False) is None  # no variation: undefined


def test_percent_agreement_averages_each_units_agreeing_pairs() -> None:
    units = _units(ORDINAL)
    shares = []
    for values in units:
        pairs = [(p, q) for i, p in enumerate(values) for q in values[i + 1:]]
        if pairs:
            shares.append(sum(p == q for p, q in pairs) / len(pairs))
    assert len(shares) == 6  # the two units one rater rated are in no share
    assert percent_agreement(units) == pytest.approx(sum(shares) / len(shares), abs=1e-12)
    assert percent_agreement([[1.0], []]) is None


def test_alpha_and_kappa_have_one_implementation() -> None:
    """The jury's statistics and calibration's call the shared functions: no other module computes α or κ."""
    found = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                   if any(word in path.read_text(encoding="utf-8")
                          for word in ("krippendorff.alpha(", "cohen_kappa_score(")))
    assert found == ["stats/agreement.py"]
