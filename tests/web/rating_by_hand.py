"""Agreement statistics worked out by hand, from their textbook definitions, for the rating tests: the tests'
expected figures come from here and from the answers the browsers gave, never from consilium's own code.

- percent agreement: within each unit the share of its pairs of ratings that are equal, averaged over the units
  rated twice or more (with two raters a unit: 1 when they agree, 0 otherwise);
- Cohen's κ, quadratic weights: 1 − Σ w·O / Σ w·E over the k × k table of pairs, O the observed shares, E the
  product of the margins, w = (i − j)²;
- Krippendorff's α, ordinal: 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck, with o the coincidence matrix (each
  ordered pair of ratings within a unit of m ratings counting 1 / (m − 1)), n_c its margins, n their sum, and
  δ_ck = (Σ_{g between c and k} n_g) − (n_c + n_k) / 2 (Krippendorff 2011, "Computing Krippendorff's alpha").
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations

__all__ = ["alpha_ordinal", "percent", "quadratic_kappa"]


def percent(units: Sequence[Sequence[float]]) -> float:
    shares = []
    for values in units:
        pairs = [(a, b) for i, a in enumerate(values) for j, b in enumerate(values) if i != j]
        shares.append(sum(a == b for a, b in pairs) / len(pairs))
    return sum(shares) / len(shares)


def quadratic_kappa(first: Sequence[float], second: Sequence[float], labels: Sequence[float]) -> float:
    k, n = len(labels), len(first)
    observed = [[0.0] * k for _ in range(k)]
    for a, b in zip(first, second, strict=True):
        observed[labels.index(a)][labels.index(b)] += 1 / n
    rows = [sum(observed[i]) for i in range(k)]
    columns = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    weighted_observed = sum((i - j) ** 2 * observed[i][j] for i in range(k) for j in range(k))
    weighted_expected = sum((i - j) ** 2 * rows[i] * columns[j] for i in range(k) for j in range(k))
    return 1 - weighted_observed / weighted_expected


def alpha_ordinal(units: Sequence[Sequence[float]], labels: Sequence[float]) -> float:
    k = len(labels)
    coincidence = [[0.0] * k for _ in range(k)]
    for values in units:
        if len(values) < 2:
            continue
        for a, b in permutations(values, 2):
            coincidence[labels.index(a)][labels.index(b)] += 1 / (len(values) - 1)
    margins = [sum(row) for row in coincidence]
    n = sum(margins)

    def delta(c: int, g: int) -> float:
        low, high = min(c, g), max(c, g)
        return (sum(margins[low:high + 1]) - (margins[c] + margins[g]) / 2) ** 2

    observed = sum(coincidence[c][g] * delta(c, g) for c in range(k) for g in range(k))
    expected = sum(margins[c] * margins[g] * delta(c, g) for c in range(k) for g in range(k))
    return 1 - (n - 1) * observed / expected
