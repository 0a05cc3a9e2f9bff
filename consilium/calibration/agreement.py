"""Judge–physician agreement, per criterion and pooled, with case-clustered bootstrap intervals.

Libraries: scikit-learn (``cohen_kappa_score``: Cohen's κ, quadratic-weighted for ordinal scales),
scipy (``spearmanr``, ``pearsonr``), krippendorff (``alpha``); κ, α and the bootstrap's case draws through
:mod:`consilium.stats`, as the jury's agreement among its judges and every other interval.
Binary statistics follow npcbench.txt Eq. A9: observed agreement, Cohen's κ, sensitivity,
specificity, balanced agreement (their mean) and the judge's true rate q_J.

A unit is what a physician rated: one output's component and criterion (:attr:`Pair.unit`: case,
variant, panel model, run, trace), so the ratings of several models or formats of a case are separate
units. The bootstrap resamples cases with replacement and keeps repeats: a case drawn twice brings its
units twice, as distinct units (columns of α's reliability data).

On a rubric whose scale has an out-of-scope score (the four-decision rubric's −1,
:mod:`consilium.judges.scope`), that score is no point of the scale: every statistic above reads the
in-scope scores only (α the in-scope ratings of each unit; MAE, κ, ρ and the rest the pairs both sides
scored in scope), and :func:`scope_rows` reports agreement on scope (in or out) apart, as the jury's
agreement does (consilium/reports/jury_agreement.py).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from statistics import median
from typing import TYPE_CHECKING, Any

from consilium.calibration.pairs import Pair
from consilium.stats import case_draws, cohen_kappa, krippendorff_alpha, percent_agreement, percentile_interval

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BINARY", "BOOTSTRAP_KEY", "ORDINAL", "AgreementRow", "agreement", "agreement_groups", "as_dict",
           "baseline_pairs", "binary_stats", "describe",
           "kripp_alpha", "ordinal_stats", "reliability_data", "scope_rows"]

#: The name every row's bootstrap draws are seeded with (:mod:`consilium.stats`: the seed and a name).
BOOTSTRAP_KEY = "calibration agreement"
ORDINAL = ("mae", "exact", "within_one", "qwk", "spearman", "pearson")
BINARY = ("accuracy", "kappa", "sensitivity", "specificity", "balanced_agreement", "judge_true_rate",
          "physician_true_rate")


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def ordinal_stats(h: np.ndarray, j: np.ndarray, labels: Sequence[int]) -> dict[str, float | None]:
    from scipy import stats as scipy_stats  # on use: the command line's parser never loads scipy

    diff = abs(h - j)
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


def reliability_data(pairs: Sequence[Pair], raters: Sequence[str], *, include_judge: bool = True,
                     out_of_scope: float | None = None) -> np.ndarray:
    """Krippendorff's reliability data: a row per rater in ``raters`` (then the judge's, unless excluded),
    a column per unit (one output's component and criterion), NaN where a rater did not rate it or put
    it out of scope (``out_of_scope``: the rubric's out-of-scope score, None when it has none)."""
    import numpy as np  # on use: the command line's parser never loads numpy

    units = sorted({p.unit for p in pairs})
    column = {unit: i for i, unit in enumerate(units)}
    row = {rater: i for i, rater in enumerate(raters)}
    data = np.full((len(raters) + int(include_judge), len(units)), np.nan)
    for p in pairs:
        data[row[p.rater], column[p.unit]] = np.nan if p.physician == out_of_scope else p.physician
        if include_judge:
            data[-1, column[p.unit]] = np.nan if p.judge == out_of_scope else p.judge
    return data


def _alpha(data: np.ndarray, binary: bool) -> float | None:
    return krippendorff_alpha(data, binary=binary) if data.shape[1] >= 2 else None


def kripp_alpha(pairs: Sequence[Pair], binary: bool, *, include_judge: bool = True,
                out_of_scope: float | None = None) -> float | None:
    """Krippendorff's α over units, with every physician (and the judge, unless excluded) as raters, over
    the in-scope ratings."""
    return _alpha(reliability_data(pairs, sorted({p.rater for p in pairs}), include_judge=include_judge,
                                   out_of_scope=out_of_scope), binary)


def _by_unit(pairs: Sequence[Pair]) -> dict[tuple[str, ...], list[Pair]]:
    by_unit: dict[tuple[str, ...], list[Pair]] = defaultdict(list)
    for p in pairs:
        by_unit[p.unit].append(p)
    return by_unit


def baseline_pairs(pairs: Sequence[Pair], out_of_scope: float | None = None) -> list[Pair]:
    """Physician vs physician, leaving one rater out: each rating against the median of the other
    raters' in-scope ratings of the same unit (rounded half up), as the 'judge' side; against
    ``out_of_scope`` when every other rater put the unit out of scope."""
    out = []
    for rated in _by_unit(pairs).values():
        for p in rated:
            others = [q.physician for q in rated if q.rater != p.rater]
            scored = [v for v in others if v != out_of_scope]
            if scored:
                out.append(replace(p, judge=math.floor(median(scored) + 0.5)))
            elif others and out_of_scope is not None:
                out.append(replace(p, judge=out_of_scope))
    return out


@dataclass
class AgreementRow:
    criterion: str
    n: int
    cases: int
    point: dict[str, float | None]
    ci: dict[str, tuple[float, float] | None] = field(default_factory=dict)


def _scored(pairs: Sequence[Pair], out_of_scope: float | None) -> list[Pair]:
    """The pairs both sides scored in scope."""
    return [p for p in pairs if out_of_scope is None or out_of_scope not in (p.physician, p.judge)]


@dataclass(frozen=True)
class _Cluster:
    """One case's pairs of a row as arrays: physician and judge scores of the pairs both scored in scope,
    and its columns of α's reliability data (the row's raters, then the judge's unless the row is the
    physician baseline; NaN out of scope)."""

    physician: np.ndarray
    judge: np.ndarray
    reliability: np.ndarray

    @classmethod
    def of(cls, pairs: Sequence[Pair], raters: Sequence[str], include_judge: bool,
           out_of_scope: float | None) -> _Cluster:
        import numpy as np  # on use: the command line's parser never loads numpy

        scored = _scored(pairs, out_of_scope)
        return cls(np.array([p.physician for p in scored], dtype=float),
                   np.array([p.judge for p in scored], dtype=float),
                   reliability_data(pairs, raters, include_judge=include_judge, out_of_scope=out_of_scope))


def _compute(clusters: Sequence[_Cluster], binary: bool, labels: Sequence[int]) -> dict[str, float | None]:
    """Every statistic over the clusters' units taken together; a cluster listed twice counts twice."""
    import numpy as np  # on use: the command line's parser never loads numpy

    h = np.concatenate([c.physician for c in clusters])
    j = np.concatenate([c.judge for c in clusters])
    result: dict[str, float | None] = dict.fromkeys(BINARY if binary else ORDINAL) if not len(h) \
        else binary_stats(h, j) if binary else ordinal_stats(h, j, labels)
    # For the physician baseline, α is among the physicians alone (its clusters hold no judge row).
    result["alpha"] = _alpha(np.hstack([c.reliability for c in clusters]), binary)
    return result


def agreement_groups(pairs: Sequence[Pair], *, with_baseline: bool = True,
                     out_of_scope: float | None = None) -> list[tuple[str, list[Pair]]]:
    """The rows' pairs: per criterion, then 'pooled', then (with ≥ 2 raters on some item) the physician
    baseline."""
    groups: list[tuple[str, list[Pair]]] = [
        (name, [p for p in pairs if p.criterion == name]) for name in sorted({p.criterion for p in pairs})]
    groups.append(("pooled", list(pairs)))
    if with_baseline:
        base = baseline_pairs(pairs, out_of_scope)
        if base:
            groups.append(("physician baseline (pooled)", base))
    return groups


def agreement(pairs: Sequence[Pair], *, binary: bool, labels: Sequence[int], bootstrap: int = 1000,
              seed: int = 0, with_baseline: bool = True, out_of_scope: float | None = None,
              on_row: Callable[[AgreementRow], None] | None = None) -> list[AgreementRow]:
    """Rows per criterion, then 'pooled', then (with ≥ 2 raters on some item) the physician baseline;
    ``on_row`` hears of each row as its bootstrap ends (a progress bar). With ``out_of_scope`` (the
    rubric's out-of-scope score, :func:`consilium.judges.scope.out_of_scope_score`) every statistic reads
    in-scope scores only, over ``labels`` without it; a row's ``n`` and ``cases`` count the pairs both
    sides scored in scope.

    One set of bootstrap draws serves every row and statistic, so intervals are comparable and
    reproducible: :func:`consilium.stats.case_draws` of the C sorted case ids under the key
    :data:`BOOTSTRAP_KEY` (``default_rng([seed, crc32("calibration agreement")]).integers(0, C, (bootstrap,
    C))``, the package's one seeding rule), each draw a resample of C cases with replacement, repeats kept,
    every rated output of a drawn case with it (npcbench.txt C.2 "Confidence intervals"; Fig. A7's case-level
    resampling keeps every generator and criterion of a sampled case)."""
    cases = sorted({p.case_id for p in pairs})
    draws = case_draws(len(cases), draws=bootstrap, seed=seed, key=BOOTSTRAP_KEY)
    points = [label for label in labels if label != out_of_scope]
    rows = []
    for name, group in agreement_groups(pairs, with_baseline=with_baseline, out_of_scope=out_of_scope):
        rows.append(_row(name, group, cases, draws, binary, points, out_of_scope))
        if on_row is not None:
            on_row(rows[-1])
    return rows


def _row(name: str, group: list[Pair], cases: list[str], draws: np.ndarray, binary: bool,
         labels: Sequence[int], out_of_scope: float | None) -> AgreementRow:
    baseline = name.startswith("physician baseline")
    raters = sorted({p.rater for p in group})
    by_case: dict[str, list[Pair]] = defaultdict(list)
    for p in group:
        by_case[p.case_id].append(p)
    clusters = {case: _Cluster.of(pairs, raters, not baseline, out_of_scope) for case, pairs in by_case.items()}
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
        ci[key] = percentile_interval(values) if len(values) >= max(10, len(draws) // 2) else None
    scored = _scored(group, out_of_scope)
    return AgreementRow(criterion=name, n=len(scored), cases=len({p.case_id for p in scored}), point=point, ci=ci)


def scope_rows(pairs: Sequence[Pair], out_of_scope: float | None) -> list[dict[str, Any]]:
    """Agreement on scope, apart from the statistics on scores: per criterion and pooled, how often the
    judge and a physician put a unit in or out of scope alike (percent agreement over the pairs); then,
    with ≥ 2 raters on some unit, the physicians among themselves (percent agreement within each unit
    rated twice or more, averaged over those units, as the jury's scope agreement). None for a rubric
    without an out-of-scope score."""
    if out_of_scope is None:
        return []
    rows: list[dict[str, Any]] = []
    for name, group in agreement_groups(pairs, with_baseline=False):
        decided = [[p.physician != out_of_scope, p.judge != out_of_scope] for p in group]
        rows.append({"criterion": name, "n": len(group),
                     "physician_out_of_scope": sum(not h for h, _ in decided),
                     "judge_out_of_scope": sum(not j for _, j in decided),
                     "both_out_of_scope": sum(not h and not j for h, j in decided),
                     "percent_agreement": percent_agreement(decided), "note": ""})
    units = [[p.physician != out_of_scope for p in rated] for rated in _by_unit(pairs).values()]
    pairable = [u for u in units if len(u) >= 2]
    if pairable:
        rows.append({"criterion": "physician baseline (pooled)", "n": sum(len(u) for u in pairable),
                     "physician_out_of_scope": sum(len(u) - sum(u) for u in pairable), "judge_out_of_scope": None,
                     "both_out_of_scope": None, "percent_agreement": percent_agreement(pairable),
                     "note": f"physicians among themselves, over the {len(pairable)} units two or more rated"})
    return rows


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
