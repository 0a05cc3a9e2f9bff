"""Judgement records: separate files that point to the trace they scored (DESIGN.md, RunRecord)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.judges.scope_labels import FrozenScope
from consilium.models import CallRecord, GenerationSettings
from consilium.traces.schema import UsageSummary

__all__ = ["JUDGEMENT_VERSION", "Judgement", "JudgementItem", "JuryMember", "JuryVerdict", "JuryVote",
           "check_scores", "read_judgement"]


class JuryVote(BaseModel):
    """One judge's decision on an item of a jury's judgement (docs/judges.md, Juries)."""

    model_config = ConfigDict(extra="forbid")

    judge: str = Field(description="the judge's spec, as given to --judge-model")
    model: str = Field(description="the judge's model id")
    score: float | None
    not_evaluable: bool = False
    reason: str | None = None
    rationale: str | None = None
    flags: dict[str, bool] = Field(default_factory=dict)
    failed_calls: int | None = Field(default=None, ge=0, description=(
        "the judge calls asked for this decision that failed without an answer (the backend raised; a call several "
        "decisions read counts on the first of them); null where no call was asked, and in records made before it "
        "was recorded (their reason, 'judge call failed', says so)"))


class JuryVerdict(BaseModel):
    """How the item's score came from the votes: the rule, who counted, and the tie it resolved, if any."""

    model_config = ConfigDict(extra="forbid")

    rule: Literal["median", "majority"] = Field(description="median for ordinal scales, majority for binary")
    judges: int
    evaluable: int = Field(description="judges whose vote counted (the not-evaluable ones are left out)")
    not_evaluable: int
    tie: str | None = Field(default=None, description="the tie and how it was resolved; null when there was none")


class JudgementItem(BaseModel):
    """One judge decision: a criterion of a component (or a ranked candidate, or a case criterion)."""

    model_config = ConfigDict(extra="forbid")

    component: str
    criterion: str
    score: float | None = Field(description="the criterion's score; null when not evaluable")
    calibrated_score: float | None = Field(default=None, description="after isotonic calibration, if applied")
    not_evaluable: bool = False
    reason: str | None = Field(default=None, description="why it is not evaluable")
    rationale: str | None = None
    flags: dict[str, bool] = Field(default_factory=dict)
    detail: dict[str, Any] = Field(default_factory=dict, description="kind, weight, candidate text, …")
    failed_calls: int | None = Field(default=None, ge=0, description=(
        "the judge calls asked for this decision that failed without an answer (the backend raised; a call several "
        "decisions read counts on the first of them); null where no call was asked, and in records made before it "
        "was recorded (their reason, 'judge call failed', says so)"))
    votes: list[JuryVote] | None = Field(default=None, description="each judge's decision (a jury only)")
    verdict: JuryVerdict | None = Field(default=None, description="how the votes became the score (a jury only)")


class JuryMember(BaseModel):
    model_config = ConfigDict(extra="forbid")

    judge: str = Field(description="the spec given to --judge-model")
    model: str = Field(description="its model id")
    family: str = Field(description="its model family (consilium/judges/jury.py, family)")
    decoding: Literal["constrained", "paper"] = Field(
        default="paper", description="the order this judge asked in (consilium/judges/decoding.py); records "
                                     "made before it was recorded: paper, the only order there was")


class Judgement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1.1"] = "1.1"
    kind: Literal["judgement"] = "judgement"
    trace: str = Field(description="file name of the judged trace, in the same folder")
    trace_kind: str
    trace_run_id: str
    case_id: str
    variant: str | None = Field(description="the trace's format (consilium) or mode (board)")
    rubric: str
    rubric_version: int
    rubric_source: str
    judge_model: str
    settings: GenerationSettings
    decoding: Literal["constrained", "paper"] = Field(
        default="paper", description="the judge's decoding order (consilium/judges/decoding.py): constrained, "
                                     "the schema enforced from the first attempt; paper, schema-free attempts "
                                     "and repairs first, then one constrained attempt. Records made before it "
                                     "was recorded: paper, the only order there was (a jury: its first judge's; "
                                     "each judge's in jury)")
    prompt_hash: str = Field(description="sha256 (12 hex) of the judge prompt files and the rubric file")
    items: list[JudgementItem]
    aggregates: dict[str, dict[str, Any]] = Field(description="per component: the rubric's score formula")
    overlap: dict[str, Any] = Field(default_factory=dict, description="ROUGE-L etc. against the reference")
    calibration: str | None = Field(default=None, description="the isotonic calibration file applied, if any")
    notes: list[str] = Field(default_factory=list, description="what the judge was not sent, e.g. slide images a "
                                                               "text-only judge model cannot read")
    jury: list[JuryMember] | None = Field(default=None, description="the judges of a jury (null: one judge); each "
                                                                    "item's score is then the jury's verdict")
    frozen_scope: FrozenScope | None = Field(
        default=None, description="the decisions' frozen scope the judgement was made under (consilium/judges/"
                                  "scope_labels.py): the labels, whether the case gave them or a candidate-blind "
                                  "judge call (or the scope cache) did; null: none (the judge decided scope)")
    response_format: dict[str, float | str] | None = Field(
        default=None, description="a board response's OpenTumorBoard format score (every official format_details "
                                  "field and its failure's name), for the rubrics in the authors' layout; a "
                                  "response that fails it is not judged. A Specialist Turn's: answer_extraction, "
                                  "the official path that found its answer (unrecoverable: none, not judged). "
                                  "null: not scored")
    prompt_files: dict[str, str] = Field(
        default_factory=dict, description="stage → sha256 (12 hex) of the user's own prompt file that replaced "
                                          "consilium's system prompt there (--prompt-file); empty: consilium's own")
    usage: UsageSummary
    calls: list[CallRecord]
    started_at: str
    wall_s: float


JUDGEMENT_VERSION = "1.1"


def read_judgement(path: Path) -> Judgement:
    """A judgement record from its file, older versions upgraded on read (consilium/traces/versions.py);
    an unreadable or invalid one is a one-line :class:`UserError` naming the file and the field. Every
    reader of judgement files reads them here, so a record edited by hand is checked for every command:
    no number may be NaN or infinite, and each score (an item's, a jury vote's) must be a point of the
    rubric's scale (its out-of-scope score included) or null when not evaluable (:func:`check_scores`)."""
    import json

    from consilium.traces.versions import JUDGEMENT_STEPS, upgrade

    met: list[str] = []  # the NaN or infinite numbers met while parsing (the record is walked only if any)

    def constant(text: str) -> float:
        met.append(text)
        return float(text)

    def number(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):  # 1e999
            met.append(text)
        return value

    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=constant, parse_float=number)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path}: not a readable judgement record ({exc})") from None
    where = _not_finite(data) if met else None
    if where is not None:
        raise UserError(f"{path}: {where[0]}: {where[1]} is not a finite number (a judgement record holds none)")
    data = upgrade(data, current=JUDGEMENT_VERSION, steps=JUDGEMENT_STEPS, where=str(path))
    try:
        judgement = Judgement.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc)}") from None
    problem = check_scores(judgement)
    if problem is not None:
        raise UserError(f"{path}: {problem}")
    return judgement


def _not_finite(data: Any, where: str = "") -> tuple[str, str] | None:
    """The first number in ``data`` that is NaN or infinite (JSON has neither, Python's reader takes
    ``NaN``, ``Infinity`` and ``1e999``): its field path and its value; None when there is none."""
    if isinstance(data, float) and not math.isfinite(data):
        return where or "(the record)", repr(data)
    children = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in children:
        found = _not_finite(value, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def _rubric_scale(name: str) -> list[int] | None:
    """The scale of the rubric ``name`` when consilium knows it (shipped, a plugin's, or one of its analyses',
    as analyze's dissent-uptake; no shipped rubric's scale has changed across its versions); None for a rubric
    read from a file, which the record does not name."""
    from consilium.judges.rubric import analysis_rubric, analysis_rubric_names, load_rubric, rubric_names

    if name not in rubric_names():
        return list(analysis_rubric(name).scores) if name in analysis_rubric_names() else None
    try:
        return list(load_rubric(name).scores)
    except UserError:  # a broken plugin is reported where it is used; its scores are read unchecked here
        return None


def check_scores(judgement: Judgement) -> str | None:
    """What is wrong with the record's scores, as ``field: problem``; None when nothing is. Each item's
    and each jury vote's score is a point of the rubric's scale (the out-of-scope score, −1 on the
    four-decision rubric, is one) or null (not evaluable); a calibrated score lies within the scale.
    A rubric consilium does not know by name (a rubric file) has its scores checked for being numbers only."""
    scale = _rubric_scale(judgement.rubric)
    if scale is None:
        return None
    shown = ", ".join(f"{s:g}" for s in scale)
    for at, item in enumerate(judgement.items):
        scores = [(f"items.{at}.score", item.score)]
        scores += [(f"items.{at}.votes.{n}.score", v.score) for n, v in enumerate(item.votes or [])]
        for field, score in scores:
            if score is not None and score not in scale:
                return (f"{field}: {score:g} is not a score of rubric {judgement.rubric} (scale {shown}; null when "
                        "not evaluable)")
        calibrated = item.calibrated_score
        if calibrated is not None and not min(scale) <= calibrated <= max(scale):
            return f"items.{at}.calibrated_score: {calibrated:g} is outside rubric {judgement.rubric}'s scale ({shown})"
    return None
