"""Physician ratings files (CSV or JSONL), documented in docs/calibration.md.

One row per rating: ``case_id``, ``component``, ``criterion``, ``rater``, ``score``, and optionally
``variant`` (the consilium format or board mode the rating refers to), ``model`` (the panel model's id),
``run`` (the trace's run id) and ``trace`` (the trace file name): the optional columns say which judged
trace a rating belongs to when a case was run more than once (:mod:`consilium.calibration.pairs`).
``format`` is another name for ``variant`` (the word ai-consilium.txt uses: free-form and structured
response formats, "model-format opportunities" in Fig. 6); a row may give both only when they agree.
Scores must lie on the rubric's scale; a row's component and criterion must name a judgement item of
the rubric, as the judge writes it (:mod:`consilium.calibration.keys`: a criterion id of the rubric on a
component it lists, ``final_conclusion`` or ``rank_<n>`` on a diagnosis-match rubric, any id on a signed
rubric, whose criteria come from each case).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from consilium.calibration.keys import rated_key_error
from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.judges.rubric import COMPONENTS, Rubric

__all__ = ["Rating", "load_ratings"]


class Rating(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str = Field(min_length=1)
    component: str
    criterion: str = Field(min_length=1)
    rater: str = Field(min_length=1)
    score: float
    variant: str | None = None
    model: str | None = None
    run: str | None = None
    trace: str | None = None


def _rows(path: Path) -> list[tuple[int, dict[str, object]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: ratings file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the ratings ({exc})") from None
    if path.suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserError(f"{path}: line {number}: not valid JSON ({exc.msg})") from None
                if not isinstance(value, dict):
                    raise UserError(f"{path}: line {number}: a rating must be a JSON object")
                rows.append((number, value))
        return rows
    if path.suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        return [(number, {k: v for k, v in row.items() if v not in ("", None)})
                for number, row in enumerate(reader, 2)]
    raise UserError(f"{path}: ratings must be .csv or .jsonl")


def load_ratings(path: str | Path, rubric: Rubric) -> list[Rating]:
    file = Path(path)
    ratings = []
    for number, row in _rows(file):
        if "format" in row:
            row = dict(row)
            fmt = row.pop("format")
            if row.get("variant") not in (None, fmt):
                raise UserError(f"{file}: line {number}: format: {fmt!r} disagrees with variant {row['variant']!r} "
                                "(format is another name for variant)")
            row["variant"] = fmt
        try:
            rating = Rating.model_validate(row)
        except ValidationError as exc:
            raise UserError(f"{file}: line {number}: {first_error(exc)}") from None
        if rating.component not in COMPONENTS:
            raise UserError(f"{file}: line {number}: component: unknown component {rating.component!r}")
        wrong = rated_key_error(rubric, rating.component, rating.criterion)
        if wrong is not None:
            raise UserError(f"{file}: line {number}: {wrong}")
        if rating.score not in rubric.scale:
            raise UserError(f"{file}: line {number}: score: {rating.score:g} is not on the {rubric.name} scale "
                            f"{rubric.scale}")
        ratings.append(rating)
    if not ratings:
        raise UserError(f"{file}: no ratings in the file")
    return ratings
