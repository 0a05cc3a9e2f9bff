"""How a jury's judges agree, whom they favour and what length does to them (``consilium jury``).

Read from the jury judgements of one rubric under a run folder (docs/judges.md, Juries):

* **agreement** (:mod:`consilium.reports.jury_agreement`): Krippendorff's α per criterion and Cohen's κ
  per judge pair, each with its percent agreement, and, on a rubric with an out-of-scope score, the
  judges' agreement on scope apart;
* **self-preference**: per judge, on the answers of panels of its own model family
  (:func:`consilium.judges.jury.family`), the mean score it gives minus the mean the other judges give
  the same items, per answer, then over answers, with a t interval over answers;
* **length bias**: Spearman's ρ (scipy ``spearmanr``) of each judge's and the jury's score of an answer
  (the mean of its scored items) with the answer's length in characters and in tokens (tiktoken).

A judge's not-evaluable item is a missing rating: it is in no statistic. On a rubric whose scale has an
out-of-scope score (the four-decision rubric's −1: "the reference decides nothing here",
opentumorboard.txt App. C.3 L184) that score is no point of the scale: α, κ, self-preference and length
bias read the in-scope scores only (:meth:`JuryData.scored`), and scope agreement is reported apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from consilium.errors import UserError
from consilium.graphs.registry import read_trace
from consilium.judges.components import component_texts
from consilium.judges.jury import family
from consilium.judges.record import JuryMember, read_judgement
from consilium.judges.rubric import Rubric
from consilium.judges.scope import OUT_OF_SCOPE, in_scope, out_of_scope_score, scale_points
from consilium.models.tokens import count_tokens
from consilium.runfolder.layout import judgement_files
from consilium.stats import t_interval

__all__ = ["ALL", "JURY", "OUT_OF_SCOPE", "Answer", "JuryData", "Unit", "groups", "length_rows", "load_jury",
           "out_of_scope_score", "self_preference_rows"]

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

    @property
    def out_of_scope(self) -> int | None:
        return out_of_scope_score(self.rubric)

    @property
    def scale(self) -> list[int]:
        """The points of the rubric's scale a score is read on: its scale without the out-of-scope score."""
        return scale_points(self.rubric)

    def scored(self, score: float | None) -> float | None:
        """``score`` when it is a point of the scale; None when not evaluable or out of scope."""
        return in_scope(score, self.rubric)


def load_jury(run_dir: Path, rubric: Rubric) -> JuryData:
    """Every jury judgement of ``rubric`` under ``run_dir``, with the trace beside each (for the answer's
    text and its panel's model). One jury for all of them: a record of another jury is refused."""
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a run folder")
    files = judgement_files(run_dir, rubric.name)  # the run's own, not a run's nested in it (an ablation's)
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


def groups(data: JuryData) -> list[tuple[str, list[Unit]]]:
    """Each criterion's units, then every unit (the pooled row, :data:`ALL`)."""
    return [*((c, [u for u in data.units if u.criterion == c]) for c in data.criteria), (ALL, data.units)]


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def self_preference_rows(data: JuryData) -> list[dict[str, object]]:
    """Per judge: on the answers of panels of its own family, its mean score minus the other judges'
    mean on the same items (per answer first, then over answers); a 95 % t interval over answers. Only
    in-scope scores count: an item is compared where the judge and at least one other scored it."""
    rows: list[dict[str, object]] = []
    for at, member in enumerate(data.members):
        own: dict[int, list[tuple[float, float]]] = {}
        for unit in data.units:
            answer = data.answers[unit.answer]
            mine = data.scored(unit.scores[at])
            others = [s for i, v in enumerate(unit.scores) if i != at and (s := data.scored(v)) is not None]
            if family(answer.panel_model) != member.family or mine is None or not others:
                continue
            own.setdefault(unit.answer, []).append((mine, sum(others) / len(others)))
        self_means = [float(np.mean([p[0] for p in pairs])) for pairs in own.values()]
        other_means = [float(np.mean([p[1] for p in pairs])) for pairs in own.values()]
        differences = [s - o for s, o in zip(self_means, other_means, strict=True)]
        low, high = t_interval(differences)
        note = ("n/a: no answer of its family that it and another judge scored in scope" if not own else
                "interval n/a: one answer" if len(own) == 1 else "")
        rows.append({"judge": member.judge, "family": member.family, "answers": len(own),
                     "items": sum(len(p) for p in own.values()),
                     "self_mean": float(np.mean(self_means)) if own else None,
                     "others_mean": float(np.mean(other_means)) if own else None,
                     "difference": float(np.mean(differences)) if own else None, "ci_low": low, "ci_high": high,
                     "note": note})
    return rows


def _answer_scores(data: JuryData, at: int | None) -> dict[int, float]:
    """Each answer's score by judge ``at`` (None: the jury's verdicts): the mean of its items scored in
    scope (an answer with none has no score)."""
    scores: dict[int, list[float]] = {}
    for unit in data.units:
        score = data.scored(unit.verdict if at is None else unit.scores[at])
        if score is not None:
            scores.setdefault(unit.answer, []).append(score)
    return {answer: sum(values) / len(values) for answer, values in scores.items()}


def _length_note(scores: list[float], lengths: list[int]) -> str:
    if len(scores) < 3:
        return f"n/a: {len(scores)} answers scored in scope, fewer than 3"
    if len(set(scores)) == 1:
        return f"n/a: no variation (every answer scores {scores[0]:g})"
    if len(set(lengths)) == 1:
        return "n/a: no variation (every answer has the same length)"
    return ""


def length_rows(data: JuryData) -> list[dict[str, object]]:
    """Spearman's ρ of each judge's (and the jury's) answer scores with answer length, per component;
    None, with the reason in ``note``, where a side is constant or fewer than three answers were scored."""
    from scipy.stats import spearmanr

    rows: list[dict[str, object]] = []
    components = list(dict.fromkeys(a.component for a in data.answers))
    raters: list[tuple[str, int | None]] = [*((m.judge, i) for i, m in enumerate(data.members)), (JURY, None)]
    for component in components:
        for name, at in raters:
            scored = [(s, data.answers[a]) for a, s in _answer_scores(data, at).items()
                      if data.answers[a].component == component]
            row: dict[str, object] = {"judge": name, "component": component, "n": len(scored)}
            notes: dict[str, str] = {}
            for unit in ("chars", "tokens"):
                rho = p = None
                lengths = [int(getattr(a, unit)) for _, a in scored]
                notes[unit] = _length_note([s for s, _ in scored], lengths)
                if not notes[unit]:
                    result = spearmanr([s for s, _ in scored], lengths)
                    rho, p = _finite(float(result.statistic)), _finite(float(result.pvalue))
                row[f"rho_{unit}"], row[f"p_{unit}"] = rho, p
            same = notes["chars"] == notes["tokens"]
            row["note"] = notes["chars"] if same else "; ".join(f"{u}: {n}" for u, n in notes.items() if n)
            rows.append(row)
    return rows
