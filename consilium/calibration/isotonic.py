"""Per-criterion isotonic post-hoc calibration of judge scores (scikit-learn ``IsotonicRegression``).

Fitted on a training split of cases, reported on the held-out split (MAE before and after), and
saved as data (breakpoints) that ``consilium judge --calibration FILE`` applies by linear
interpolation, clipped to the rubric's scale. On a rubric with an out-of-scope score
(:mod:`consilium.judges.scope`), a map is fitted on the pairs both sides scored in scope, between the
scale's points, and a judge's out-of-scope score is never mapped (its calibrated score is None).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from consilium.calibration.pairs import Pair
from consilium.errors import UserError
from consilium.fileio import write_json_atomic

__all__ = ["Calibration", "calibration_key", "fit_isotonic", "load_calibration", "split_cases"]


class CriterionMap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    x: list[float]
    y: list[float]
    train_n: int
    test_n: int
    mae_before: float | None
    mae_after: float | None

    def apply(self, score: float) -> float:
        import numpy as np  # on use: the command line's parser never loads numpy

        return float(np.interp(score, self.x, self.y))


def calibration_key(component: str, criterion: str) -> str:
    return f"{component}/{criterion}"


class Calibration(BaseModel):
    """Isotonic maps from judge to physician scores, one per (component, criterion) that was fitted: a
    criterion is judged against other text in each component (ai-consilium.txt, Table 29), so a map is
    applied only to the component it was fitted on."""

    model_config = ConfigDict(extra="forbid")

    #: The file format: 2 fits one map per (component, criterion), keyed "component/criterion"; the first
    #: format pooled every component into one map per criterion and applied it to all, so a map fitted on one
    #: component's scores bent every other's.
    kind: Literal["isotonic-calibration/2"] = "isotonic-calibration/2"
    rubric: str
    rubric_version: int
    seed: int
    train_fraction: float
    ratings: str
    out_of_scope: int | None = Field(default=None, description="the rubric's out-of-scope score: never mapped")
    criteria: dict[str, CriterionMap] = Field(description='keyed "component/criterion"')

    def apply(self, component: str, criterion: str, score: float | None) -> float | None:
        """The calibrated score, or None where no map was fitted (or the score is None or out of scope)."""
        mapping = self.criteria.get(calibration_key(component, criterion))
        return None if score is None or score == self.out_of_scope or mapping is None else mapping.apply(score)

    def save(self, path: Path) -> Path:
        return write_json_atomic(path, self.model_dump(mode="json"))


def split_cases(cases: Sequence[str], train_fraction: float, seed: int) -> tuple[set[str], set[str]]:
    import numpy as np  # on use: the command line's parser never loads numpy

    ordered = sorted(set(cases))
    rng = np.random.default_rng(seed)
    shuffled = [ordered[i] for i in rng.permutation(len(ordered))]
    cut = max(1, min(len(shuffled) - 1, round(len(shuffled) * train_fraction)))
    return set(shuffled[:cut]), set(shuffled[cut:])


def _mae(h: list[float], j: list[float]) -> float | None:
    import numpy as np  # on use: the command line's parser never loads numpy

    return float(np.mean(np.abs(np.array(h) - np.array(j)))) if h else None


def fit_isotonic(pairs: Sequence[Pair], *, rubric: str, rubric_version: int, scale: Sequence[int],
                 train_fraction: float = 0.5, seed: int = 0, ratings: str = "",
                 out_of_scope: int | None = None) -> Calibration:
    """One map per (component, criterion) from judge to physician scores on ``scale``'s points, fitted on
    the training cases' pairs both scored in scope (none is out of scope without ``out_of_scope``)."""
    from sklearn.isotonic import IsotonicRegression  # on use: the command line's parser never loads sklearn

    train_cases, _ = split_cases([p.case_id for p in pairs], train_fraction, seed)
    pairs = [p for p in pairs if out_of_scope is None or out_of_scope not in (p.physician, p.judge)]
    scale = [s for s in scale if s != out_of_scope]
    criteria: dict[str, CriterionMap] = {}
    for component, criterion in sorted({(p.component, p.criterion) for p in pairs}):
        name = calibration_key(component, criterion)
        group = [p for p in pairs if (p.component, p.criterion) == (component, criterion)]
        train = [p for p in group if p.case_id in train_cases]
        test = [p for p in group if p.case_id not in train_cases]
        if len(train) < 2:
            continue
        model = IsotonicRegression(y_min=min(scale), y_max=max(scale), out_of_bounds="clip", increasing=True)
        model.fit([p.judge for p in train], [p.physician for p in train])
        mapping = CriterionMap(x=[float(v) for v in model.X_thresholds_], y=[float(v) for v in model.y_thresholds_],
                               train_n=len(train), test_n=len(test), mae_before=None, mae_after=None)
        mapping.mae_before = _mae([p.physician for p in test], [p.judge for p in test])
        mapping.mae_after = _mae([p.physician for p in test], [mapping.apply(p.judge) for p in test])
        criteria[name] = mapping
    return Calibration(rubric=rubric, rubric_version=rubric_version, seed=seed, train_fraction=train_fraction,
                       ratings=ratings, out_of_scope=out_of_scope, criteria=criteria)


def load_calibration(path: str | Path, rubric: str) -> Calibration:
    file = Path(path)
    try:
        data: Any = json.loads(file.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("kind") == "isotonic-calibration":
            raise UserError(f"{file}: kind: made by an older consilium, whose maps pooled every component; "
                            "fit it again with `consilium calibrate isotonic`")
        calibration = Calibration.model_validate(data)
    except FileNotFoundError:
        raise UserError(f"{file}: calibration file not found") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{file}: not a calibration file ({str(exc).splitlines()[0]})") from None
    if calibration.rubric != rubric:
        raise UserError(f"{file}: rubric: calibrated for {calibration.rubric!r}, not {rubric!r}")
    return calibration
