"""How a jury's judges agree, whom they favour and what length does to them (``consilium jury``).

Read from the jury judgements of one rubric under a run folder (docs/judges.md, Juries):

* **agreement**: Krippendorff's α per criterion (the ``krippendorff`` package; ordinal level for
  ordinal scales, nominal for binary) with the judges as raters and the judged items as units, and
  Cohen's κ per judge pair and criterion (scikit-learn ``cohen_kappa_score``, quadratic weights over
  the rubric's whole scale, so a weight is a distance on the scale);
* **self-preference**: per judge, on the answers of panels of its own model family
  (:func:`consilium.judges.jury.family`), the mean score it gives minus the mean the other judges give
  the same items, per answer, then over answers, with a t interval over answers;
* **length bias**: Spearman's ρ (scipy ``spearmanr``) of each judge's and the jury's score of an answer
  (the mean of its evaluable items) with the answer's length in characters and in tokens (tiktoken).

A judge's not-evaluable item is a missing rating: it is in no statistic.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Literal

import numpy as np

from consilium.errors import UserError
from consilium.judges.components import component_texts
from consilium.judges.jury import family, is_binary
from consilium.judges.record import JuryMember, read_judgement
from consilium.judges.rubric import Rubric
from consilium.models.tokens import count_tokens
from consilium.protocols.registry import read_trace

__all__ = ["ALL", "JURY", "Answer", "JuryData", "Unit", "alpha_rows", "kappa_rows", "length_rows", "load_jury",
           "self_preference_rows"]

#: The pooled row of every criterion; the jury's own row among the judges.
ALL, JURY = "all", "jury"


@dataclass(frozen=True)
class Unit:
    """One item of one judged trace: each judge's score (None: not evaluable) and the verdict."""

    answer: int  # index into JuryData.answers
    criterion: str  # component/criterion
    scores: tuple[float | None, ...]
    verdict: float | None


@dataclass(frozen=True)
class Answer:
    """One judged text: a trace's component, with its panel's model and its length."""

    judgement: str
    case_id: str
    panel_model: str
    component: str
    chars: int
    tokens: int


@dataclass
class JuryData:
    rubric: Rubric
    members: list[JuryMember]
    answers: list[Answer] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    ties: int = 0
    left_out: int = 0  # not-evaluable votes left out of a verdict

    @property
    def criteria(self) -> list[str]:
        return list(dict.fromkeys(u.criterion for u in self.units))


def load_jury(run_dir: Path, rubric: Rubric) -> JuryData:
    """Every jury judgement of ``rubric`` under ``run_dir``, with the trace beside each (for the answer's
    text and its panel's model). One jury for all of them: a record of another jury is refused."""
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a run folder")
    files = sorted(run_dir.rglob(f"*.judge.{rubric.name}.json"))
    data: JuryData | None = None
    for file in files:
        judgement = read_judgement(file)
        if judgement.jury is None:
            continue
        if data is None:
            data = JuryData(rubric, list(judgement.jury))
        elif [m.judge for m in judgement.jury] != [m.judge for m in data.members]:
            raise UserError(f"{file}: jury: {', '.join(m.judge for m in judgement.jury)} is another jury than "
                            f"{', '.join(m.judge for m in data.members)} (judge the folder again with one jury)")
        trace = read_trace(file.parent / judgement.trace)
        texts = component_texts(trace)
        where: dict[str, int] = {}
        for item in judgement.items:
            if item.votes is None or item.verdict is None:
                continue
            if item.component not in where:
                text = texts.get(item.component, "")
                where[item.component] = len(data.answers)
                data.answers.append(Answer(str(file.relative_to(run_dir)), judgement.case_id, trace.model,
                                           item.component, len(text), count_tokens(text)))
            data.units.append(Unit(where[item.component], f"{item.component}/{item.criterion}",
                                   tuple(None if v.not_evaluable else v.score for v in item.votes), item.score))
            data.ties += item.verdict.tie is not None
            data.left_out += item.verdict.not_evaluable
    if data is None:
        raise UserError(f"{run_dir}: no jury judgements for rubric {rubric.name} (judge it with --judge-model "
                        "given for each judge of the jury)")
    return data


def _groups(data: JuryData) -> list[tuple[str, list[Unit]]]:
    return [*((c, [u for u in data.units if u.criterion == c]) for c in data.criteria), (ALL, data.units)]


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def alpha_rows(data: JuryData) -> list[dict[str, object]]:
    """Krippendorff's α per criterion and pooled; None where it is undefined (no unit with two
    ratings, or no variation at all)."""
    import krippendorff

    level: Literal["nominal", "ordinal"] = "nominal" if is_binary(data.rubric) else "ordinal"
    rows: list[dict[str, object]] = []
    for name, units in _groups(data):
        matrix = np.array([[np.nan if s is None else s for s in u.scores] for u in units], dtype=float).T
        pairable = int(sum(np.sum(~np.isnan(matrix[:, i])) >= 2 for i in range(matrix.shape[1])))
        value: float | None = None
        if pairable:
            try:
                with np.errstate(divide="ignore", invalid="ignore"):  # one value only: α is undefined (nan)
                    value = _finite(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level,
                                                       value_domain=sorted(data.rubric.scale)))
            except (ValueError, ZeroDivisionError):
                value = None
        rows.append({"criterion": name, "level": level, "units": len(units), "pairable_units": pairable,
                     "alpha": value})
    return rows


def kappa_rows(data: JuryData) -> list[dict[str, object]]:
    """Cohen's κ (quadratic weights) per judge pair and criterion, on the items both evaluated."""
    from sklearn.metrics import cohen_kappa_score

    labels = sorted(data.rubric.scale)
    rows: list[dict[str, object]] = []
    for name, units in _groups(data):
        for a, b in combinations(range(len(data.members)), 2):
            both = [(u.scores[a], u.scores[b]) for u in units if u.scores[a] is not None and u.scores[b] is not None]
            value = None
            if len(both) >= 2:
                x, y = [int(p[0]) for p in both if p[0] is not None], [int(p[1]) for p in both if p[1] is not None]
                with warnings.catch_warnings():  # two judges who each gave one same score: κ undefined (nan)
                    warnings.simplefilter("ignore")
                    value = _finite(cohen_kappa_score(x, y, labels=labels, weights="quadratic"))
            rows.append({"criterion": name, "judge_a": data.members[a].judge, "judge_b": data.members[b].judge,
                         "n": len(both), "kappa": value})
    return rows


def _t_interval(values: list[float]) -> tuple[float | None, float | None]:
    from scipy.stats import t

    if len(values) < 2:
        return None, None
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    half = float(t.ppf(0.975, len(values) - 1)) * sd / math.sqrt(len(values))
    return mean - half, mean + half


def self_preference_rows(data: JuryData) -> list[dict[str, object]]:
    """Per judge: on the answers of panels of its own family, its mean score minus the other judges'
    mean on the same items (per answer first, then over answers); a 95 % t interval over answers."""
    rows: list[dict[str, object]] = []
    for at, member in enumerate(data.members):
        own: dict[int, list[tuple[float, float]]] = {}
        for unit in data.units:
            answer = data.answers[unit.answer]
            mine = unit.scores[at]
            others = [s for i, s in enumerate(unit.scores) if i != at and s is not None]
            if family(answer.panel_model) != member.family or mine is None or not others:
                continue
            own.setdefault(unit.answer, []).append((mine, sum(others) / len(others)))
        self_means = [float(np.mean([p[0] for p in pairs])) for pairs in own.values()]
        other_means = [float(np.mean([p[1] for p in pairs])) for pairs in own.values()]
        differences = [s - o for s, o in zip(self_means, other_means, strict=True)]
        low, high = _t_interval(differences)
        rows.append({"judge": member.judge, "family": member.family, "answers": len(own),
                     "items": sum(len(p) for p in own.values()),
                     "self_mean": float(np.mean(self_means)) if own else None,
                     "others_mean": float(np.mean(other_means)) if own else None,
                     "difference": float(np.mean(differences)) if own else None, "ci_low": low, "ci_high": high})
    return rows


def _answer_scores(data: JuryData, at: int | None) -> dict[int, float]:
    """Each answer's score by judge ``at`` (None: the jury's verdicts): the mean of its evaluable items."""
    scores: dict[int, list[float]] = {}
    for unit in data.units:
        score = unit.verdict if at is None else unit.scores[at]
        if score is not None:
            scores.setdefault(unit.answer, []).append(score)
    return {answer: sum(values) / len(values) for answer, values in scores.items()}


def length_rows(data: JuryData) -> list[dict[str, object]]:
    """Spearman's ρ of each judge's (and the jury's) answer scores with answer length, per component;
    None where a side is constant or fewer than three answers were scored."""
    from scipy.stats import spearmanr

    rows: list[dict[str, object]] = []
    components = list(dict.fromkeys(a.component for a in data.answers))
    raters: list[tuple[str, int | None]] = [*((m.judge, i) for i, m in enumerate(data.members)), (JURY, None)]
    for component in components:
        for name, at in raters:
            scored = [(s, data.answers[a]) for a, s in _answer_scores(data, at).items()
                      if data.answers[a].component == component]
            row: dict[str, object] = {"judge": name, "component": component, "n": len(scored)}
            for unit in ("chars", "tokens"):
                rho = p = None
                if len(scored) >= 3 and len({s for s, _ in scored}) > 1:
                    result = spearmanr([s for s, _ in scored], [getattr(a, unit) for _, a in scored])
                    rho, p = _finite(float(result.statistic)), _finite(float(result.pvalue))
                row[f"rho_{unit}"], row[f"p_{unit}"] = rho, p
            rows.append(row)
    return rows
