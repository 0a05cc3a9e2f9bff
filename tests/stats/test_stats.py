"""The one statistics module (consilium/stats): every interval, agreement and paired statistic the tables,
reports, ablations and calibration show, each implemented once, and every bootstrap seeded by one rule.

Expected values are worked out here by hand (a 2×2 table's κ, a coincidence matrix's α, Holm's products,
signed ranks) or by another route (Wilson's bounds as the roots of its quadratic, Clopper–Pearson's as the
binomial tails they leave), never by calling the module under test.
"""

from __future__ import annotations

import ast
import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import beta, binom, t

from consilium.stats import (
    bootstrap,
    case_draws,
    clopper_pearson,
    cluster_bootstrap,
    cohen_kappa,
    holm,
    krippendorff_alpha,
    rank_biserial,
    t_interval,
    wilcoxon,
    wilson,
)

PACKAGE = Path(__file__).resolve().parents[2] / "consilium"


def wilson_roots(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's bounds as the two roots p of (p̂ − p)² = z² p (1 − p) / n."""
    p_hat = k / n
    a, b, c = 1 + z * z / n, -(2 * p_hat + z * z / n), p_hat * p_hat
    roots = sorted(float(r.real) for r in np.roots([a, b, c]))
    return max(0.0, roots[0]), min(1.0, roots[1])


@pytest.mark.parametrize(("k", "n"), [(8, 10), (1, 7), (0, 5), (5, 5), (37, 120), (1.5, 2)])
def test_wilson_bounds_are_the_roots_of_its_quadratic(k: float, n: int) -> None:
    low, high = wilson(k, n)
    expected = wilson_roots(k, n)
    assert low == pytest.approx(expected[0], abs=1e-12) and high == pytest.approx(expected[1], abs=1e-12)


def test_wilson_by_hand_and_no_interval_without_cases() -> None:
    # 8 of 10, z = 1.96: centre (0.8 + 0.19208) / 1.38416 = 0.71683, half 0.22647 → [0.4902, 0.9433]
    low, high = wilson(8, 10)
    assert (round(low or 0, 4), round(high or 0, 4)) == (0.4902, 0.9433)
    # 0 of 5: centre = half = 0.38416 / 1.76832 = 0.21725 → [0, 0.4345]
    low, high = wilson(0, 5)
    assert low == 0.0 and round(high or 0, 4) == 0.4345
    assert wilson(0, 0) == (None, None)


@pytest.mark.parametrize(("k", "n"), [(3, 10), (1, 4), (11, 12), (2.5, 6)])
def test_clopper_pearson_is_the_beta_quantiles_and_leaves_each_tail_its_half(k: float, n: int) -> None:
    low, high = clopper_pearson(k, n)
    assert low == pytest.approx(beta.ppf(0.025, k, n - k + 1), abs=1e-12)
    assert high == pytest.approx(beta.ppf(0.975, k + 1, n - k), abs=1e-12)
    if float(k).is_integer():  # the bounds' definition: P(X ≥ k | low) = P(X ≤ k | high) = 2.5 %
        assert binom.sf(k - 1, n, low) == pytest.approx(0.025, abs=1e-9)
        assert binom.cdf(k, n, high) == pytest.approx(0.025, abs=1e-9)


def test_clopper_pearson_ends_and_no_cases() -> None:
    low, high = clopper_pearson(0, 8)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 8), abs=1e-12)  # (1 − p)^8 = 2.5 %
    low, high = clopper_pearson(8, 8)
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 8), abs=1e-12)  # p^8 = 2.5 %
    assert clopper_pearson(0, 0) == (None, None)


def test_t_interval_of_a_mean_by_hand() -> None:
    # 1, 2, 3, 4: mean 2.5, sample SD √(5/3); half-width t(0.975; 3) · √(5/3) / 2.
    half = t.ppf(0.975, 3) * math.sqrt(5 / 3) / 2
    low, high = t_interval([4.0, 1.0, 3.0, 2.0])
    assert low == pytest.approx(2.5 - half, abs=1e-12) and high == pytest.approx(2.5 + half, abs=1e-12)
    assert round(half, 4) == 2.0543
    assert t_interval([1.0]) == (None, None)


def test_cohens_kappa_on_a_hand_table() -> None:
    # 2×2: both 1: 20, a 1 b 0: 5, a 0 b 1: 10, both 0: 15 (50 units). p_o = 35/50 = 0.7;
    # p_e = (25·30 + 25·20) / 50² = 0.5; κ = (0.7 − 0.5) / 0.5 = 0.4.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b, [0, 1], binary=True) == pytest.approx(0.4, abs=1e-12)


def test_weighted_kappa_on_a_hand_table() -> None:
    # Three points, quadratic weights (i − j)²: pairs (1,1) (1,2) (2,2) (2,3) (3,3) (3,1).
    # Observed weighted disagreement 1 + 1 + 4 = 6 over 6 units; every margin is 2 of 6, so each cell
    # expects 2·2/6 = 2/3 and the weights sum to 2·(1 + 1 + 4) = 12: expected 8 over 6 units.
    # κ_w = 1 − 6/8 = 0.25 (unweighted the same table gives (3/6 − 1/3) / (2/3) = 0.25 too, so check another).
    a, b = [1, 1, 2, 2, 3, 3], [1, 2, 2, 3, 3, 1]
    assert cohen_kappa(a, b, [1, 2, 3], binary=False) == pytest.approx(0.25, abs=1e-12)
    # (1,1) (1,2) (2,2) (2,3) (3,3) (3,3): observed 0+1+0+1+0+0 = 2; margins a 2,2,2, b 1,2,3;
    # expected Σ w·a_i·b_j / 6 = (2/6)·Σ_ij w_ij b_j = (1/3)·(b1·(0+1+4) + b2·(1+0+1) + b3·(4+1+0)) = (5+4+15)/3 = 8.
    # κ_w = 1 − 2/8 = 0.75; unweighted: p_o = 4/6, p_e = (2+4+6)/36 = 1/3, κ = (2/3 − 1/3)/(2/3) = 0.5.
    a, b = [1, 1, 2, 2, 3, 3], [1, 2, 2, 3, 3, 3]
    assert cohen_kappa(a, b, [1, 2, 3], binary=False) == pytest.approx(0.75, abs=1e-12)
    assert cohen_kappa(a, b, [1, 2, 3], binary=True) == pytest.approx(0.5, abs=1e-12)
    assert cohen_kappa([2, 2], [2, 2], [1, 2, 3], binary=False) is None  # no variation: undefined


def test_krippendorffs_alpha_on_a_hand_table() -> None:
    # Two raters, four units: (1,1) (1,0) (0,0) (0,0), and a third rater who rated unit 2 only (0) — a
    # unit of three values weighs each ordered pair 1/2. Coincidences: unit 1 o11 += 2; unit 2 (1,0,0):
    # o10 = o01 += 2·(1/2) = 1, o00 += 2·(1/2) = 1; units 3, 4: o00 += 2 each. o11 = 2, o10 = o01 = 1, o00 = 5;
    # n1 = 3, n0 = 6, n = 9. Nominal α = 1 − (n − 1)·(o10 + o01) / (2·n0·n1) = 1 − 8·2/36 = 5/9.
    data = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [np.nan, 0, np.nan, np.nan]], dtype=float)
    assert krippendorff_alpha(data, binary=True) == pytest.approx(5 / 9, abs=1e-12)
    # Ordinal on 1..3, two raters, units (1,1) (2,3) (3,3): values 1,1,2,3,3,3; n1 = 2, n2 = 1, n3 = 3, n = 6.
    # δ(c,k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²: δ(1,2) = 1.5² = 2.25, δ(2,3) = 2² = 4, δ(1,3) = 3.5² = 12.25.
    # Observed: o23 = o32 = 1 → Σ o·δ = 2·4 = 8. Expected Σ n_c n_k δ = 2·(2·1·2.25 + 1·3·4 + 2·3·12.25) = 180.
    # α = 1 − (n − 1)·8 / 180 = 7/9.
    ordinal = np.array([[1, 2, 3], [1, 3, 3]], dtype=float)
    assert krippendorff_alpha(ordinal, binary=False) == pytest.approx(7 / 9, abs=1e-12)
    assert krippendorff_alpha(np.array([[2, 2], [2, 2]], dtype=float), binary=False) is None


def test_holm_on_a_hand_list() -> None:
    # Four testable p (the None enters no family): sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06,
    # 0.04·1 = 0.04 → kept non-decreasing: 0.06.
    adjusted = holm([0.01, 0.04, 0.03, None, 0.005])
    assert adjusted[3] is None
    assert [round(p, 12) for p in adjusted if p is not None] == [0.03, 0.06, 0.06, 0.02]
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1


def test_rank_biserial_and_wilcoxon_by_hand() -> None:
    # d = 1, −2, 3, 0, 4: the zero is dropped; ranks of |d| 1, 2, 3, 4; W+ = 8, W− = 2: r = 6/10.
    assert rank_biserial([1, -2, 3, 0, 4]) == pytest.approx(0.6)
    # ties averaged: |d| = 1, 1, 2 → ranks 1.5, 1.5, 3; W+ = 4.5, W− = 1.5: r = 3/6.
    assert rank_biserial([1, -1, 2]) == pytest.approx(0.5)
    assert rank_biserial([0.0, 1e-13]) is None  # float noise is no difference
    # d = 1, −2, 3, 4, 5, 6: W = min(W+, W−) = 2; exact two-sided p = 2·#{subsets of 1..6 summing ≤ 2}/2⁶
    # = 2·3/64 ({}, {1}, {2}).
    statistic, p = wilcoxon([1, -2, 3, 4, 5, 6])
    assert statistic == 2.0 and p == pytest.approx(6 / 64)
    assert wilcoxon([0.0, 0.0]) == (None, None)


def test_a_bootstrap_is_seeded_by_the_seed_and_its_name_alone() -> None:
    """The documented rule: default_rng([seed, crc32(key)]); the same seed and name give the same interval
    whatever else is computed, another name other draws."""
    values = [0.2, 1.5, 0.7, 3.1, 2.2, 0.9, 1.1]
    rng = np.random.default_rng([11, zlib.crc32(b"row a")])
    picks = rng.integers(0, len(values), size=(500, len(values)))
    expected = np.percentile(np.array(values)[picks].mean(axis=1), [2.5, 97.5])
    first = bootstrap(values, draws=500, seed=11, key="row a")
    bootstrap(values, draws=500, seed=11, key="row b")  # another row computed between: no effect
    assert first == bootstrap(values, draws=500, seed=11, key="row a")
    assert first == pytest.approx(tuple(expected), abs=1e-12)
    assert bootstrap(values, draws=500, seed=11, key="row b") != first
    assert bootstrap(values, draws=500, seed=12, key="row a") != first
    assert (case_draws(4, draws=3, seed=5, key="k") ==
            np.random.default_rng([5, zlib.crc32(b"k")]).integers(0, 4, size=(3, 4))).all()
    assert bootstrap([], draws=100, seed=0, key="x") == (None, None)
    assert bootstrap([1.0], draws=0, seed=0, key="x") == (None, None)


def test_clustered_resampling_keeps_a_cases_values_together() -> None:
    # Case a holds 99 zeros, case b one 1: a resample of two whole cases is aa (mean 0), ab (0.01) or bb (1),
    # bb a quarter of the time, so the 97.5th percentile is 1 and the 2.5th is 0. Resampling the 100 values
    # apart would put the upper bound near 0.03.
    low, high = cluster_bootstrap({"b": [1.0], "a": [0.0] * 99, "empty": []}, draws=2000, seed=3, key="cases")
    assert (low, high) == (0.0, 1.0)
    # By hand from the documented draws: clusters sorted by name (the empty one holds no value: not drawn).
    clusters = {"a": [0.0, 2.0, 4.0], "b": [10.0], "c": [1.0, 1.0]}
    picks = np.random.default_rng([9, zlib.crc32(b"fig|x")]).integers(0, 3, size=(300, 3))
    names = sorted(clusters)
    means = [sum(v for i in draw for v in clusters[names[i]]) / sum(len(clusters[names[i]]) for i in draw)
             for draw in picks]
    assert cluster_bootstrap({**clusters, "d": []}, draws=300, seed=9, key="fig|x") == pytest.approx(
        tuple(np.percentile(means, [2.5, 97.5])), abs=1e-12)


#: Calls that compute one of the statistics (or a bootstrap's percentiles, or its seed) and the functions
#: that define one: found anywhere else, they are a second implementation.
CALLS = {"percentile", "ppf", "cohen_kappa_score", "rankdata", "crc32"}
#: Modules whose import is a statistic's implementation (scipy's test, krippendorff's α, the beta and t laws).
IMPORTS = {"krippendorff", "scipy.stats.wilcoxon", "scipy.stats.beta", "scipy.stats.t",
           "sklearn.metrics.cohen_kappa_score"}
DEFINED = {"wilson", "wilson_interval", "clopper_pearson", "t_interval", "holm", "rank_biserial", "wilcoxon",
           "bootstrap", "cluster_bootstrap", "cohen_kappa", "krippendorff_alpha", "percent_agreement",
           "percentile_interval"}


def _computes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name in DEFINED}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in CALLS:
                found.add(f"{name}()")
        elif isinstance(node, ast.Import):
            found |= {f"{a.name}()" for a in node.names if a.name in IMPORTS}
        elif isinstance(node, ast.ImportFrom):
            found |= {f"{node.module}.{a.name}()" for a in node.names if f"{node.module}.{a.name}" in IMPORTS}
    return found


def test_every_interval_and_statistic_has_one_implementation() -> None:
    """Nothing outside consilium/stats computes a Wilson or Clopper–Pearson bound, bootstrap percentiles or
    seeds, κ, α, Wilcoxon, signed ranks or Holm's adjustment; inside, each is defined once."""
    where = {str(path.relative_to(PACKAGE)): found for path in PACKAGE.rglob("*.py") if (found := _computes(path))}
    assert set(where) <= {"stats/bootstrap.py", "stats/intervals.py", "stats/agreement.py", "stats/paired.py"}, where
    defined = [name for found in where.values() for name in found if not name.endswith("()")]
    assert sorted(defined) == sorted(DEFINED - {"wilson_interval"})
