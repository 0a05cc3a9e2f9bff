"""Judgement records: separate files that point to the trace they scored (DESIGN.md, RunRecord)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.models import CallRecord, GenerationSettings
from consilium.traces.schema import UsageSummary

__all__ = ["JUDGEMENT_VERSION", "Judgement", "JudgementItem", "JuryMember", "JuryVerdict", "JuryVote",
           "read_judgement"]


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
    votes: list[JuryVote] | None = Field(default=None, description="each judge's decision (a jury only)")
    verdict: JuryVerdict | None = Field(default=None, description="how the votes became the score (a jury only)")


class JuryMember(BaseModel):
    model_config = ConfigDict(extra="forbid")

    judge: str = Field(description="the spec given to --judge-model")
    model: str = Field(description="its model id")
    family: str = Field(description="its model family (consilium/judges/jury.py, family)")


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
    prompt_hash: str = Field(description="sha256 (12 hex) of the judge prompt files and the rubric file")
    items: list[JudgementItem]
    aggregates: dict[str, dict[str, Any]] = Field(description="per component: the rubric's score formula")
    overlap: dict[str, Any] = Field(default_factory=dict, description="ROUGE-L etc. against the reference")
    calibration: str | None = Field(default=None, description="the isotonic calibration file applied, if any")
    notes: list[str] = Field(default_factory=list, description="what the judge was not sent, e.g. slide images a "
                                                               "text-only judge model cannot read")
    jury: list[JuryMember] | None = Field(default=None, description="the judges of a jury (null: one judge); each "
                                                                    "item's score is then the jury's verdict")
    usage: UsageSummary
    calls: list[CallRecord]
    started_at: str
    wall_s: float


JUDGEMENT_VERSION = "1.1"


def read_judgement(path: Path) -> Judgement:
    """A judgement record from its file, older versions upgraded on read (consilium/traces/versions.py);
    an unreadable or invalid one is a one-line :class:`UserError`."""
    import json

    from consilium.traces.versions import JUDGEMENT_STEPS, upgrade

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path}: not a readable judgement record ({exc})") from None
    data = upgrade(data, current=JUDGEMENT_VERSION, steps=JUDGEMENT_STEPS, where=str(path))
    try:
        return Judgement.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc)}") from None
