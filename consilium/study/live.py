"""Agreement on what a study has rated so far, for the administrator's page (and ``study status``).

No statistic is implemented here: percent agreement, Cohen's κ and Krippendorff's α are
:mod:`consilium.stats`'s, and physicians are paired with the judge by :func:`consilium.calibration.pairs.
pair_ratings`, the pairing ``calibrate agreement`` uses, so the live figures are those the final report will
give on the same ratings. κ is quadratic-weighted on an ordinal scale (unweighted on a binary one), as
``calibrate agreement`` reports it (docs/calibration.md, "calibrate agreement"): on the AI Consilium 0–3 scale
(ai-consilium.txt, Table 31) a 0 against a 3 is a worse disagreement than a 2 against a 3, and quadratic
weights are the usual choice for such ordinal clinical ratings and the one the package's κ implements.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING

from consilium.calibration.pairs import pair_ratings
from consilium.judges.scope import scale_points
from consilium.stats import cohen_kappa, krippendorff_alpha, percent_agreement
from consilium.study.export import study_ratings
from consilium.study.views import LiveAgreement, binary_scale

if TYPE_CHECKING:
    from consilium.calibration.ratings import Rating
    from consilium.judges.record import Judgement
    from consilium.judges.rubric import Rubric
    from consilium.study.database import Database

__all__ = ["inter_rater", "judge_pairs", "live_agreement"]

Unit = tuple[str | None, ...]


def _unit(r: Rating) -> Unit:
    return r.case_id, r.variant, r.model, r.run, r.trace, r.component, r.criterion


def inter_rater(ratings: list[Rating], labels: list[int], binary: bool) -> tuple[int, float | None, float | None,
                                                                                  float | None]:
    """(units two or more raters scored, percent agreement, κ over every pair of raters within a unit, α)."""
    import numpy as np  # on use: the command line's parser never loads numpy

    by_unit: dict[Unit, dict[str, float]] = defaultdict(dict)
    for r in ratings:
        by_unit[_unit(r)][r.rater] = r.score
    shared = {unit: scores for unit, scores in by_unit.items() if len(scores) >= 2}
    percent = percent_agreement([list(scores.values()) for scores in shared.values()])
    a, b = [], []
    for scores in shared.values():
        for first, second in combinations(sorted(scores), 2):  # each pair once, the raters in name order
            a.append(scores[first])
            b.append(scores[second])
    kappa = cohen_kappa(a, b, labels, binary=binary) if a else None
    raters = sorted({r.rater for r in ratings})
    data = np.full((len(raters), len(shared)), np.nan)
    for column, scores in enumerate(shared.values()):
        for rater, score in scores.items():
            data[raters.index(rater), column] = score
    alpha = krippendorff_alpha(data, binary=binary, domain=labels) if len(shared) >= 2 else None
    return len(shared), percent, kappa, alpha


def _judgements(db: Database, study_id: str, run_dir: Path, rubric: str,
                ratings: list[Rating]) -> list[tuple[Path, Judgement]]:
    from consilium.runfolder import RunFolder

    folder = RunFolder.open(run_dir)
    with db.transaction() as conn:
        traces = sorted({row[0] for row in conn.execute("SELECT DISTINCT trace FROM outputs WHERE study_id = ?",
                                                        (study_id,)).all()})
    rated = {r.trace for r in ratings}
    found: list[tuple[Path, Judgement]] = []
    for trace in traces:
        path = folder.path / trace
        if path.name in rated and path.is_file():
            found += [(p, j) for p, j in folder.judgements_of(path) if j.rubric == rubric]
    return found


def judge_pairs(db: Database, study_id: str, run_dir: Path, rubric: str,
                ratings: list[Rating]) -> list[tuple[float, float]]:
    """(physician, judge) for every scored answer whose item the judge scored, as ``calibrate`` pairs them."""
    if not ratings:
        return []
    pairs, _ = pair_ratings(ratings, _judgements(db, study_id, run_dir, rubric, ratings))
    return [(p.physician, p.judge) for p in pairs]


def live_agreement(db: Database, study_id: str, run_dir: Path, rubric: Rubric) -> LiveAgreement:
    """The agreement of the study's answers so far (:class:`~consilium.study.views.LiveAgreement`)."""
    found = study_ratings(db, study_id)
    binary = binary_scale(rubric)
    labels = scale_points(rubric)
    items, percent, kappa, alpha = inter_rater(found.ratings, labels, binary)
    pairs = judge_pairs(db, study_id, run_dir, rubric.name, found.ratings)
    h, j = [p[0] for p in pairs], [p[1] for p in pairs]
    return LiveAgreement(items=items, percent=percent, kappa=kappa, alpha=alpha, judge_pairs=len(pairs),
                         judge_percent=sum(x == y for x, y in pairs) / len(pairs) if pairs else None,
                         judge_kappa=cohen_kappa(h, j, labels, binary=binary) if pairs else None,
                         not_evaluable=found.not_evaluable, kappa_weights="none" if binary else "quadratic")
