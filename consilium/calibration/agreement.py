"""Judge–physician agreement, per criterion and pooled, with case-clustered bootstrap intervals.

Libraries: scikit-learn (``cohen_kappa_score``: Cohen's κ, quadratic-weighted for ordinal scales),
scipy (``spearmanr``, ``pearsonr``), krippendorff (``alpha``), numpy (bootstrap draws).
Binary statistics follow npcbench.txt Eq. A9: observed agreement, Cohen's κ, sensitivity,
specificity, balanced agreement (their mean) and the judge's true rate q_J.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import krippendorff
import numpy as np
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score

from consilium.calibration.pairs import Pair

__all__ = ["BINARY", "ORDINAL", "AgreementRow", "agreement", "agreement_groups", "as_dict", "baseline_pairs",
           "binary_stats", "describe", "kripp_alpha", "ordinal_stats"]

ORDINAL = ("mae", "exact", "within_one", "qwk", "spearman", "pearson")
BINARY = ("accuracy", "kappa", "sensitivity", "specificity", "balanced_agreement", "judge_true_rate",
          "physician_true_rate")


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def ordinal_stats(h: np.ndarray, j: np.ndarray, labels: Sequence[int]) -> dict[str, float | None]:
    diff = np.abs(h - j)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qwk = cohen_kappa_score(h.astype(int), j.astype(int), weights="quadratic", labels=list(labels)) \
            if len(set(h) | set(j)) > 1 else float("nan")
        spearman = scipy_stats.spearmanr(h, j).statistic if len(set(h)) > 1 and len(set(j)) > 1 else float("nan")
        pearson = scipy_stats.pearsonr(h, j).statistic if len(set(h)) > 1 and len(set(j)) > 1 else float("nan")
    return {"mae": float(diff.mean()), "exact": float((diff == 0).mean()), "within_one": float((diff <= 1).mean()),
            "qwk": _finite(qwk), "spearman": _finite(spearman), "pearson": _finite(pearson)}


def binary_stats(h: np.ndarray, j: np.ndarray, labels: Sequence[int] = (0, 1)) -> dict[str, float | None]:
    tp = float(((h == 1) & (j == 1)).sum())
    tn = float(((h == 0) & (j == 0)).sum())
    fp = float(((h == 0) & (j == 1)).sum())
    fn = float(((h == 1) & (j == 0)).sum())
    sensitivity = tp / (tp + fn) if tp + fn else None
    specificity = tn / (tn + fp) if tn + fp else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kappa = cohen_kappa_score(h.astype(int), j.astype(int), labels=[0, 1])
    return {"accuracy": (tp + tn) / len(h), "kappa": _finite(kappa), "sensitivity": sensitivity,
            "specificity": specificity,
            "balanced_agreement": (sensitivity + specificity) / 2
            if sensitivity is not None and specificity is not None else None,
            "judge_true_rate": (tp + fp) / len(h), "physician_true_rate": (tp + fn) / len(h)}


def kripp_alpha(pairs: Sequence[Pair], binary: bool, *, include_judge: bool = True) -> float | None:
    """Krippendorff's α over items, with every physician (and the judge, unless excluded) as raters."""
    items = sorted({(p.case_id, p.component, p.criterion) for p in pairs})
    raters = sorted({p.rater for p in pairs})
    if len(items) < 2:
        return None
    index = {item: i for i, item in enumerate(items)}
    data = np.full((len(raters) + int(include_judge), len(items)), np.nan)
    for p in pairs:
        column = index[(p.case_id, p.component, p.criterion)]
        data[raters.index(p.rater), column] = p.physician
        if include_judge:
            data[-1, column] = p.judge
    try:
        return _finite(krippendorff.alpha(reliability_data=data,
                                          level_of_measurement="nominal" if binary else "ordinal"))
    except (ValueError, ZeroDivisionError):
        return None


def baseline_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """Physician vs physician, leaving one rater out: each rating against the median of the other
    raters of the same item (rounded half up), as the 'judge' side."""
    by_item: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for p in pairs:
        by_item[(p.case_id, p.component, p.criterion)][p.rater] = p.physician
    out = []
    for (case_id, component, criterion), ratings in by_item.items():
        if len(ratings) < 2:
            continue
        for rater, score in ratings.items():
            others = [v for r, v in ratings.items() if r != rater]
            out.append(Pair(case_id, component, criterion, rater, score, math.floor(median(others) + 0.5)))
    return out


@dataclass
class AgreementRow:
    criterion: str
    n: int
    cases: int
    point: dict[str, float | None]
    ci: dict[str, tuple[float, float] | None] = field(default_factory=dict)


def _compute(pairs: Sequence[Pair], binary: bool, labels: Sequence[int],
             baseline: bool = False) -> dict[str, float | None]:
    h = np.array([p.physician for p in pairs], dtype=float)
    j = np.array([p.judge for p in pairs], dtype=float)
    result = binary_stats(h, j) if binary else ordinal_stats(h, j, labels)
    # For the physician baseline, α is among the physicians alone.
    result["alpha"] = kripp_alpha(pairs, binary, include_judge=not baseline)
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

    One set of bootstrap draws (cases resampled with replacement, seeded) serves every row and
    statistic, so intervals are comparable and reproducible."""
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
    point = _compute(group, binary, labels, baseline)
    by_case: dict[str, list[Pair]] = defaultdict(list)
    for p in group:
        by_case[p.case_id].append(p)
    samples: dict[str, list[float]] = defaultdict(list)
    for draw in draws:
        resampled = [p for index in draw for p in by_case.get(cases[index], [])]
        if not resampled:
            continue
        for key, value in _compute(resampled, binary, labels, baseline).items():
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
