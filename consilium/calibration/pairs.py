"""Physician ratings paired with the judge's scores for the same judged trace, component and criterion.

A judged trace is one run of one model on one case in one variant: pairing by case alone would let
two runs or two models of a case collide silently. A rating names its trace by
any of ``variant``, ``model``, ``run`` and ``trace``; one that could still belong to several judged
traces is refused with a message naming them, and so is a rater rating one trace's item twice. Each
pair carries its trace's identity, so agreement counts one unit per rated output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from consilium.calibration.keys import item_key
from consilium.calibration.ratings import Rating
from consilium.errors import UserError
from consilium.judges.jury import one_judge
from consilium.judges.record import Judgement, read_judgement
from consilium.runfolder.layout import judgement_files

__all__ = ["Judged", "Pair", "judged_traces", "load_judgements", "match_ratings", "pair_ratings"]


@dataclass(frozen=True)
class Pair:
    """A physician's rating and the judge's score of one rated unit: a component and criterion of one
    output, the judged trace named by ``variant``, panel ``model``, ``run`` and ``trace`` (None: unknown,
    for pairs made without them, one output per case)."""

    case_id: str
    component: str
    criterion: str
    rater: str
    physician: float
    judge: float
    variant: str | None = None
    model: str | None = None
    run: str | None = None
    trace: str | None = None

    @property
    def output(self) -> tuple[str, str, str, str, str]:
        """The rated output: its case, variant, panel model, run and trace ("" where unknown)."""
        return self.case_id, self.variant or "", self.model or "", self.run or "", self.trace or ""

    @property
    def unit(self) -> tuple[str, ...]:
        """What was rated: one output's component and criterion. Agreement statistics key items by it, so
        the ratings of two outputs of a case never merge."""
        return *self.output, self.component, self.criterion


@dataclass(frozen=True)
class Judged:
    """A judgement with the panel model of its trace (read from the trace file beside it; None unknown)."""

    judgement: Judgement
    model: str | None = None
    path: Path | None = None  # the judgement file, when read from one (its trace lies beside it)

    def describe(self) -> str:
        j = self.judgement
        return f"run {j.trace_run_id}, model {self.model or '?'}, variant {j.variant or '-'}, trace {j.trace}"


def load_judgements(run_dir: str | Path, rubric: str, judge: str | None = None) -> list[tuple[Path, Judgement]]:
    """Every judgement of ``rubric`` under ``run_dir``; a jury's items score the verdict, or with ``judge``
    (a judge spec of the jury, ``calibrate --judge``) that judge's own scores."""
    folder = Path(run_dir)
    if not folder.is_dir():
        raise UserError(f"{folder}: --judgements must be a run folder holding *.judge.{rubric}.json files")
    files = judgement_files(folder, rubric)  # the run's own, not a run's nested in it (an ablation's)
    if not files:
        raise UserError(f"{folder}: no judgements for rubric {rubric} (run `consilium judge` first)")
    loaded = [(file, read_judgement(file)) for file in files]
    if judge is None:
        return loaded
    try:
        return [(file, one_judge(judgement, judge)) for file, judgement in loaded]
    except ValueError as exc:
        raise UserError(f"--judge: {exc}") from None


def _panel_model(path: Path, judgement: Judgement) -> str | None:
    """The ``model`` of the trace the judgement was made from: ``consilium judge`` writes the judgement
    beside the trace and names it in ``trace``."""
    try:
        value = json.loads((path.parent / judgement.trace).read_text(encoding="utf-8")).get("model")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def judged_traces(judgements: Sequence[Judgement | tuple[Path, Judgement]]) -> list[Judged]:
    return [Judged(j) if isinstance(j, Judgement) else Judged(j[1], _panel_model(*j), j[0]) for j in judgements]


def _names(rating: Rating, judged: Judged) -> bool:
    j = judged.judgement
    return (j.case_id == rating.case_id
            and rating.variant in (None, j.variant) and rating.model in (None, judged.model)
            and rating.run in (None, j.trace_run_id) and rating.trace in (None, j.trace)
            and any(item_key(i) == (rating.component, rating.criterion) for i in j.items))


def match_ratings(ratings: list[Rating], judgements: Sequence[Judgement | tuple[Path, Judgement]],
                  origin: str | Path | None = None) -> list[tuple[Rating, Judged | None]]:
    """Each rating with the one judged trace it names (case, optional variant, model, run and trace)
    and whose judgement holds its component and criterion; None when none does. A rating that names
    several is refused (a :class:`UserError` naming them); ``origin`` (the ratings file) begins the
    message."""
    by_case: dict[str, list[Judged]] = {}
    for judged in judged_traces(judgements):
        by_case.setdefault(judged.judgement.case_id, []).append(judged)
    matched: list[tuple[Rating, Judged | None]] = []
    for rating in ratings:
        found = [j for j in by_case.get(rating.case_id, []) if _names(rating, j)]
        if len(found) > 1:
            where = f"{origin}: " if origin else ""
            raise UserError(f"{where}rating of {rating.case_id}/{rating.component}/{rating.criterion} by "
                            f"{rating.rater} matches {len(found)} judged traces "
                            f"({'; '.join(j.describe() for j in found)}); "
                            "add a model, run or variant column to the ratings")
        matched.append((rating, found[0] if found else None))
    return matched


def pair_ratings(ratings: list[Rating], judgements: Sequence[Judgement | tuple[Path, Judgement]],
                 origin: str | Path | None = None) -> tuple[list[Pair], int]:
    """Pairs for every rating whose item the judge scored (not-evaluable items are left out, as the
    papers leave them out of agreement); also returns how many ratings found no judge score. Pass
    ``load_judgements``' (path, judgement) pairs so that a rating's ``model`` can be matched;
    ``origin`` (the ratings file) begins the message of a refused rating."""
    pairs: list[Pair] = []
    seen: set[tuple[tuple[str, ...], str]] = set()
    unmatched = 0
    for rating, judged in match_ratings(ratings, judgements, origin):
        score = None if judged is None else next(
            (i.score for i in judged.judgement.items if item_key(i) == (rating.component, rating.criterion)), None)
        if judged is None or score is None:
            unmatched += 1
            continue
        j = judged.judgement
        pair = Pair(rating.case_id, rating.component, rating.criterion, rating.rater, rating.score, score,
                    variant=j.variant, model=judged.model, run=j.trace_run_id, trace=j.trace)
        if (pair.unit, pair.rater) in seen:
            where = f"{origin}: " if origin else ""
            raise UserError(f"{where}{rating.rater} rated {rating.case_id}/{rating.component}/{rating.criterion} "
                            f"of one judged trace twice ({judged.describe()}); keep one rating per rater and item")
        seen.add((pair.unit, pair.rater))
        pairs.append(pair)
    return pairs, unmatched
