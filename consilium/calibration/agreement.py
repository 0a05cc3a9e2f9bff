"""Judge–physician agreement, per criterion and pooled, with case-clustered bootstrap intervals.

Libraries: scikit-learn (``cohen_kappa_score``: Cohen's κ, quadratic-weighted for ordinal scales),
scipy (``spearmanr``, ``pearsonr``), krippendorff (``alpha``), numpy (bootstrap draws); κ and α through
:mod:`consilium.judges.agreement`, as the jury's agreement among its judges.
Binary statistics follow npcbench.txt Eq. A9: observed agreement, Cohen's κ, sensitivity,
specificity, balanced agreement (their mean) and the judge's true rate q_J.

A unit is what a physician rated: one output's component and criterion (:attr:`Pair.unit`: case,
variant, panel model, run, trace), so the ratings of several models or formats of a case are separate
units. The bootstrap resamples cases with replacement and keeps repeats: a case drawn twice brings its
units twice, as distinct units (columns of α's reliability data).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from consilium.calibration.pairs import Pair
from consilium.judges.agreement import cohen_kappa, krippendorff_alpha

__all__ = ["BINARY", "ORDINAL", "AgreementRow", "agreement", "agreement_groups", "as_dict", "baseline_pairs",
           "binary_stats", "describe", "kripp_alpha", "ordinal_stats", "reliability_data"]

ORDINAL = ("mae", "exact", "within_one", "qwk", "spearman", "pearson")
BINARY = ("accuracy", "kappa", "sensitivity", "specificity", "balanced_agreement", "judge_true_rate",
          "physician_true_rate")


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def ordinal_stats(h: np.ndarray, j: np.ndarray, labels: Sequence[int]) -> dict[str, float | None]:
    diff = np.abs(h - j)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spearman = scipy_stats.spearmanr(h, j).statistic if len(set(h)) > 1 and len(set(j)) > 1 else float("nan")
        pearson = scipy_stats.pearsonr(h, j).statistic if len(set(h)) > 1 and len(set(j)) > 1 else float("nan")
    return {"mae": float(diff.mean()), "exact": float((diff == 0).mean()), "within_one": float((diff <= 1).mean()),
            "qwk": cohen_kappa(h, j, labels, binary=False), "spearman": _finite(spearman), "pearson": _finite(pearson)}


def binary_stats(h: np.ndarray, j: np.ndarray, labels: Sequence[int] = (0, 1)) -> dict[str, float | None]:
    tp = float(((h == 1) & (j == 1)).sum())
    tn = float(((h == 0) & (j == 0)).sum())
    fp = float(((h == 0) & (j == 1)).sum())
    fn = float(((h == 1) & (j == 0)).sum())
    sensitivity = tp / (tp + fn) if tp + fn else None
    specificity = tn / (tn + fp) if tn + fp else None
    return {"accuracy": (tp + tn) / len(h), "kappa": cohen_kappa(h, j, [0, 1], binary=True), "sensitivity": sensitivity,
            "specificity": specificity,
            "balanced_agreement": (sensitivity + specificity) / 2
            if sensitivity is not None and specificity is not None else None,
            "judge_true_rate": (tp + fp) / len(h), "physician_true_rate": (tp + fn) / len(h)}


def reliability_data(pairs: Sequence[Pair], raters: Sequence[str], *, include_judge: bool = True) -> np.ndarray:
    """Krippendorff's reliability data: a row per rater in ``raters`` (then the judge's, unless excluded),
    a column per unit (one output's component and criterion), NaN where a rater did not rate it."""
    units = sorted({p.unit for p in pairs})
    column = {unit: i for i, unit in enumerate(units)}
    row = {rater: i for i, rater in enumerate(raters)}
    data = np.full((len(raters) + int(include_judge), len(units)), np.nan)
    for p in pairs:
        data[row[p.rater], column[p.unit]] = p.physician
        if include_judge:
            data[-1, column[p.unit]] = p.judge
    return data


def _alpha(data: np.ndarray, binary: bool) -> float | None:
    return krippendorff_alpha(data, binary=binary) if data.shape[1] >= 2 else None


def kripp_alpha(pairs: Sequence[Pair], binary: bool, *, include_judge: bool = True) -> float | None:
    """Krippendorff's α over units, with every physician (and the judge, unless excluded) as raters."""
    return _alpha(reliability_data(pairs, sorted({p.rater for p in pairs}), include_judge=include_judge), binary)


def baseline_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """Physician vs physician, leaving one rater out: each rating against the median of the other
    raters of the same unit (rounded half up), as the 'judge' side."""
    by_unit: dict[tuple[str, ...], list[Pair]] = defaultdict(list)
    for p in pairs:
        by_unit[p.unit].append(p)
    out = []
    for rated in by_unit.values():
        for p in rated:
            others = [q.physician for q in rated if q.rater != p.rater]
            if others:
                out.append(replace(p, judge=math.floor(median(others) + 0.5)))
    return out


@dataclass
class AgreementRow:
    criterion: str
    n: int
    cases: int
    point: dict[str, float | None]
    ci: dict[str, tuple[float, float] | None] = field(default_factory=dict)


@dataclass(frozen=True)
class _Cluster:
    """One case's pairs of a row as arrays: physician and judge scores, and its columns of α's
    reliability data (the row's raters, then the judge's unless the row is the physician baseline)."""

    physician: np.ndarray
    judge: np.ndarray
    reliability: np.ndarray

    @classmethod
    def of(cls, pairs: Sequence[Pair], raters: Sequence[str], include_judge: bool) -> _Cluster:
        return cls(np.array([p.physician for p in pairs], dtype=float), np.array([p.judge for p in pairs], dtype=float),
                   reliability_data(pairs, raters, include_judge=include_judge))


def _compute(clusters: Sequence[_Cluster], binary: bool, labels: Sequence[int]) -> dict[str, float | None]:
    """Every statistic over the clusters' units taken together; a cluster listed twice counts twice."""
    h = np.concatenate([c.physician for c in clusters])
    j = np.concatenate([c.judge for c in clusters])
    result = binary_stats(h, j) if binary else ordinal_stats(h, j, labels)
    # For the physician baseline, α is among the physicians alone (its clusters hold no judge row).
    result["alpha"] = _alpha(np.hstack([c.reliability for c in clusters]), binary)
    return result


def agreement_groups(pairs: Sequence[Pair], *, with_baseline: bool = True) -> list[tuple[str, list[Pair]]]:
    """The rows' pairs: per criterion, then 'pooled', then (with ≥ 2 raters on some item) the physician
    baseline."""
    groups: list[tuple[str, list[Pair]]] = [
        (name, [p for p in pairs if p.criterion == name]) for name in sorted({p.criterion for p in pairs})]
    groups.append(("pooled", list(pairs)))
    if with_baseline:
        base = baseline_pairs(pairs)
        if base:
            groups.append(("physician baseline (pooled)", base))
    return groups


def agreement(pairs: Sequence[Pair], *, binary: bool, labels: Sequence[int], bootstrap: int = 1000,
              seed: int = 0, with_baseline: bool = True,
              on_row: Callable[[AgreementRow], None] | None = None) -> list[AgreementRow]:
    """Rows per criterion, then 'pooled', then (with ≥ 2 raters on some item) the physician baseline;
    ``on_row`` hears of each row as its bootstrap ends (a progress bar).

    One set of bootstrap draws serves every row and statistic, so intervals are comparable and
    reproducible: ``numpy.random.default_rng(seed).integers(0, C, (bootstrap, C))`` over the C sorted
    case ids, each draw a resample of C cases with replacement, repeats kept, every rated output of a drawn
    case with it (npcbench.txt C.2 "Confidence intervals"; Fig. A7's case-level resampling keeps every
    generator and criterion of a sampled case)."""
    cases = sorted({p.case_id for p in pairs})
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(cases), size=(bootstrap, len(cases))) if cases and bootstrap else np.empty((0, 0))
    rows = []
    for name, group in agreement_groups(pairs, with_baseline=with_baseline):
        rows.append(_row(name, group, cases, draws, binary, labels))
        if on_row is not None:
            on_row(rows[-1])
    return rows


def _row(name: str, group: list[Pair], cases: list[str], draws: np.ndarray, binary: bool,
         labels: Sequence[int]) -> AgreementRow:
    baseline = name.startswith("physician baseline")
    raters = sorted({p.rater for p in group})
    by_case: dict[str, list[Pair]] = defaultdict(list)
    for p in group:
        by_case[p.case_id].append(p)
    clusters = {case: _Cluster.of(pairs, raters, not baseline) for case, pairs in by_case.items()}
    point = _compute([clusters[c] for c in sorted(clusters)], binary, labels)
    samples: dict[str, list[float]] = defaultdict(list)
    for draw in draws:
        # Repeats kept: a case drawn twice brings its units twice, as distinct columns.
        resampled = [clusters[cases[index]] for index in draw if cases[index] in clusters]
        if not resampled:
            continue
        for key, value in _compute(resampled, binary, labels).items():
            if value is not None:
                samples[key].append(value)
    ci: dict[str, tuple[float, float] | None] = {}
    for key in point:
        values = samples.get(key, [])
        ci[key] = (float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))) \
            if len(values) >= max(10, len(draws) // 2) else None
    return AgreementRow(criterion=name, n=len(group), cases=len(by_case), point=point, ci=ci)


def describe(row: AgreementRow, key: str, fmt: Callable[[float], str] = lambda v: f"{v:.3f}") -> str:
    value = row.point.get(key)
    if value is None:
        return "–"
    interval = row.ci.get(key)
    return f"{fmt(value)} [{fmt(interval[0])}, {fmt(interval[1])}]" if interval else fmt(value)


def as_dict(row: AgreementRow) -> dict[str, Any]:
    return {"criterion": row.criterion, "n": row.n, "cases": row.cases, **row.point,
            **{f"{k}_ci_low": (v[0] if v else None) for k, v in row.ci.items()},
            **{f"{k}_ci_high": (v[1] if v else None) for k, v in row.ci.items()}}
