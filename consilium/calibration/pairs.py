"""Physician ratings paired with the judge's scores for the same case, component and criterion."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from consilium.calibration.ratings import Rating
from consilium.errors import UserError
from consilium.judges.record import Judgement, read_judgement

__all__ = ["Pair", "load_judgements", "pair_ratings"]


@dataclass(frozen=True)
class Pair:
    case_id: str
    component: str
    criterion: str
    rater: str
    physician: float
    judge: float


def load_judgements(run_dir: str | Path, rubric: str) -> list[tuple[Path, Judgement]]:
    folder = Path(run_dir)
    if not folder.is_dir():
        raise UserError(f"{folder}: --judgements must be a run folder holding *.judge.{rubric}.json files")
    files = sorted(folder.rglob(f"*.judge.{rubric}.json"))
    if not files:
        raise UserError(f"{folder}: no judgements for rubric {rubric} (run `consilium judge` first)")
    return [(file, read_judgement(file)) for file in files]


def pair_ratings(ratings: list[Rating], judgements: list[Judgement]) -> tuple[list[Pair], int]:
    """Pairs for every rating whose item the judge scored (not-evaluable items are left out, as the
    papers leave them out of agreement); also returns how many ratings found no judge score."""
    scores: dict[tuple[str, str | None, str, str], float] = {}
    variants: dict[tuple[str, str, str], set[str | None]] = {}
    for judgement in judgements:
        for item in judgement.items:
            if item.score is None:
                continue
            scores[(judgement.case_id, judgement.variant, item.component, item.criterion)] = item.score
            variants.setdefault((judgement.case_id, item.component, item.criterion), set()).add(judgement.variant)
    pairs: list[Pair] = []
    unmatched = 0
    for rating in ratings:
        variant = rating.variant
        if variant is None:
            found = variants.get((rating.case_id, rating.component, rating.criterion), set())
            if len(found) > 1:
                raise UserError(f"rating of {rating.case_id}/{rating.component}/{rating.criterion} matches judgements "
                                f"of several variants ({', '.join(sorted(str(v) for v in found))}); "
                                "add a variant column to the ratings")
            variant = next(iter(found), None)
        judge = scores.get((rating.case_id, variant, rating.component, rating.criterion))
        if judge is None:
            unmatched += 1
            continue
        pairs.append(Pair(rating.case_id, rating.component, rating.criterion, rating.rater, rating.score, judge))
    return pairs, unmatched
