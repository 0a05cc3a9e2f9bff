"""How far a jury's judges agree (``consilium jury``; docs/judges.md, Juries).

* **Krippendorff's α** per criterion and pooled (ordinal level for ordinal scales, nominal for binary),
  the judges as raters and the judged items as units;
* **Cohen's κ** per judge pair and criterion (quadratic weights over the scale's points);
* **percent agreement** beside each: for α, the share of agreeing judge pairs within an item, averaged
  over the items with two scores or more (each item counts once, as Fleiss's observed agreement P̄); for
  κ, the share of the pair's common items with the same score;
* **scope agreement**, on a rubric with an out-of-scope score: the same percent agreement on the
  decision "in scope or out of scope", over the items two judges or more decided.

α, κ and their percent agreement read the in-scope scores only (:meth:`JuryData.scored`): "out of scope"
is no point of an ordinal scale, and counting it as the lowest one makes judges who agree that a
dimension is out of scope look like judges who agree on its score. A statistic that cannot be computed
is None and its row's ``note`` says why. The statistics themselves are computed as the judge's agreement
with physicians is (:mod:`consilium.stats.agreement`, one implementation for both).
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

import numpy as np

from consilium.judges.jury import is_binary
from consilium.reports.jury import JuryData, Unit, groups
from consilium.stats import cohen_kappa, krippendorff_alpha, percent_agreement

__all__ = ["alpha_rows", "kappa_rows", "scope_rows"]


def _in_scope(data: JuryData, unit: Unit) -> list[float]:
    return [s for v in unit.scores if (s := data.scored(v)) is not None]


def alpha_rows(data: JuryData) -> list[dict[str, object]]:
    """Krippendorff's α and percent agreement per criterion and pooled, over in-scope scores; α is None
    where it is undefined (no item with two in-scope scores, or no variation among them)."""
    level: Literal["nominal", "ordinal"] = "nominal" if is_binary(data.rubric) else "ordinal"
    rows: list[dict[str, object]] = []
    for name, units in groups(data):
        scored = [_in_scope(data, u) for u in units]
        pairable = [values for values in scored if len(values) >= 2]
        seen = sorted({v for values in pairable for v in values})
        value: float | None = None
        if not pairable:
            note = "n/a: no item with two in-scope scores"
        elif len(seen) == 1:
            note = f"n/a: no variation (every in-scope score of an item with two is {seen[0]:g})"
        else:
            matrix = np.array([[np.nan if (s := data.scored(v)) is None else s for v in u.scores] for u in units],
                              dtype=float).T
            value = krippendorff_alpha(matrix, binary=level == "nominal", domain=data.scale)
            note = "" if value is not None else "n/a: undefined (no expected disagreement)"
        rows.append({"criterion": name, "level": level, "units": len(units), "pairable_units": len(pairable),
                     "alpha": value, "percent_agreement": percent_agreement(pairable), "note": note})
    return rows


def kappa_rows(data: JuryData) -> list[dict[str, object]]:
    """Cohen's κ (quadratic weights) and percent agreement per judge pair and criterion, on the items both
    judges scored in scope."""
    rows: list[dict[str, object]] = []
    for name, units in groups(data):
        for a, b in combinations(range(len(data.members)), 2):
            both = [(x, y) for u in units
                    if (x := data.scored(u.scores[a])) is not None and (y := data.scored(u.scores[b])) is not None]
            value = None
            if len(both) < 2:
                note = f"n/a: {len(both)} item{'s' * (len(both) != 1)} both scored in scope, fewer than 2"
            elif len({x for x, _ in both} | {y for _, y in both}) == 1:
                note = f"n/a: no variation (both judges gave every common item {both[0][0]:g})"
            else:
                value = cohen_kappa([x for x, _ in both], [y for _, y in both], data.scale,
                                    binary=is_binary(data.rubric))
                note = "" if value is not None else "n/a: undefined (no expected disagreement)"
            agree = sum(x == y for x, y in both) / len(both) if both else None
            rows.append({"criterion": name, "judge_a": data.members[a].judge, "judge_b": data.members[b].judge,
                         "n": len(both), "kappa": value, "percent_agreement": agree, "note": note})
    return rows


def scope_rows(data: JuryData) -> list[dict[str, object]]:
    """Per criterion and pooled: how the judges decided scope (votes in and out of scope) and their percent
    agreement on it, over the items two judges or more decided; none for a rubric without out-of-scope."""
    if data.out_of_scope is None:
        return []
    rows: list[dict[str, object]] = []
    for name, units in groups(data):
        decided = [[v != data.out_of_scope for v in u.scores if v is not None] for u in units]
        pairable = [d for d in decided if len(d) >= 2]
        rows.append({"criterion": name, "units": len(units), "pairable_units": len(pairable),
                     "in_scope_votes": sum(sum(d) for d in decided),
                     "out_of_scope_votes": sum(len(d) - sum(d) for d in decided),
                     "unanimous_units": sum(len(set(d)) == 1 for d in pairable),
                     "percent_agreement": percent_agreement(pairable),
                     "note": "" if pairable else "n/a: no item decided by two judges"})
    return rows
