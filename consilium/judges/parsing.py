"""A judge's answer read into a judgement item, as the rubric's scoring kind reads it (one reader per kind).

The answer's text was checked against its schema and made canonical while the call was made
(:mod:`consilium.judges.answers`, inside the repair loop of asking.py); what reaches a reader here is that
canonical value, or nothing: then the item is not evaluable, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from consilium.judges.answers import CriterionMet, DiagnosisMatch
from consilium.judges.kinds import ScoringKind
from consilium.judges.record import JudgementItem
from consilium.judges.tasks import JudgeTask

__all__ = ["not_evaluable", "read_item"]


def not_evaluable(task: JudgeTask, reason: str, failed_calls: int | None = None) -> JudgementItem:
    return JudgementItem(component=task.component, criterion=task.criterion, score=None, not_evaluable=True,
                         reason=reason, detail=task.detail, failed_calls=failed_calls)


def _base(task: JudgeTask) -> dict[str, Any]:
    return {"component": task.component, "criterion": task.criterion, "detail": task.detail}


def _criterion(task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
    """A criterion's score (or not evaluable) and its flags."""
    flags = {k: v for k, v in parsed.items() if isinstance(v, bool)}
    if parsed["score"] == "not_evaluable":
        return JudgementItem(**_base(task), score=None, not_evaluable=True,
                             reason="the judge found it not evaluable", rationale=parsed["rationale"], flags=flags)
    return JudgementItem(**_base(task), score=float(parsed["score"]), rationale=parsed["rationale"], flags=flags)


def _decision(task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
    """One dimension of the four-decision answer (opentumorboard.txt App. C.3)."""
    base = _base(task)
    score = parsed["scores"][task.criterion]
    if task.criterion in parsed["ignored"]:  # a locked dimension: the judge's answer there is not read
        base["detail"] = {**task.detail, "ignored_answer": parsed["ignored"][task.criterion]}
    if score is None:  # salvaged: this dimension stayed invalid, the others are read
        return JudgementItem(**base, score=None, not_evaluable=True, rationale=parsed["rationale"],
                             reason=f"invalid judge output on this dimension, {error}")
    return JudgementItem(**base, score=float(score), rationale=parsed["rationale"])


def _met(task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
    """NPCBench: the case's criterion met (1) or not (0)."""
    answer = CriterionMet.model_validate(parsed)
    return JudgementItem(**_base(task), score=1.0 if answer.criteria_met else 0.0, rationale=answer.explanation)


def _match(task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
    """Neural-MedBench: the candidate diagnosis matches (1) or not (0)."""
    answer = DiagnosisMatch.model_validate(parsed)
    return JudgementItem(**_base(task), score=1.0 if answer.match else 0.0, rationale=answer.rationale)


def _consistency(task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
    """One score of the consistency judge's answer; its two flags go with discussion_conclusion_consistency,
    the score the reward reads, so each board counts them once."""
    base = _base(task)
    if task.criterion in parsed["ignored"]:  # a decision the frozen scope leaves absent: its answer is not read
        base["detail"] = {**task.detail, "ignored_answer": parsed["ignored"][task.criterion]}
    flags = parsed["flags"] if task.criterion == "discussion_conclusion_consistency" else {}
    return JudgementItem(**base, score=float(parsed["scores"][task.criterion]), rationale=parsed["rationale"],
                         flags=flags)


#: Each scoring kind's reader, by its name (kinds.py).
_READERS: dict[str, Callable[[JudgeTask, dict[str, Any], str], JudgementItem]] = {
    "mean": _criterion, "single": _criterion, "weighted_decisions": _decision, "signed_criteria": _met,
    "diagnosis_match": _match, "consistency": _consistency}


def read_item(kind: ScoringKind, task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
    """An item from the validated answer, in the canonical shape of :mod:`consilium.judges.answers`;
    ``error``: for an answer salvaged in part, how it was asked and what stayed invalid (else empty)."""
    return _READERS[kind.name](task, parsed, error)
