"""What the OpenTumorBoard authors' code does before it judges a board: score the response's format and judge
nothing that fails it (``training/verl_otb/reward.py``: a truncated, severely repetitive or block-less response
skips every judge call), and fix the decisions' scope before any candidate is read (frozen_scope.py).

A board's response is its transcript (``<discussion>…</discussion>`` and ``<conclusion>…</conclusion>``),
scored by :func:`consilium.otb.format_score.format_score` with its truncation, length and limit as the board
recorded them. The gate applies to a rubric in the authors' layout that judges a board's conclusion; a format
failure leaves every item not evaluable, with the failure named, and no call asked.
"""

from __future__ import annotations

from pathlib import Path

from consilium.cases import Case
from consilium.judges.answers import Scope, decision_scope
from consilium.judges.frozen_scope import ScopeFailure, frozen_scope
from consilium.judges.record import JudgementItem
from consilium.judges.rubric import Rubric
from consilium.judges.scope_labels import FrozenScope
from consilium.log import get_logger
from consilium.models import ChatModel, GenerationSettings
from consilium.otb.format_score import FormatScore, format_score
from consilium.traces.schema import TraceBase

__all__ = ["SCOPE_STAGE", "board_format", "format_failure", "format_record", "response_format", "scope_of",
           "unjudged"]

log = get_logger(__name__)

#: The ``--prompt-file`` stage of the candidate-blind scope call.
SCOPE_STAGE = "otb-scope"


def response_format(trace: TraceBase | None) -> FormatScore | None:
    """A board response's format score, fed what the board recorded of the response besides its text (its
    truncation, its length and length limit, in the official fields of its format report); None for a trace
    with no transcript."""
    transcript = getattr(trace, "transcript", None)
    if not isinstance(transcript, str):
        return None
    official = getattr(getattr(trace, "validation", None), "official", None) or {}
    length, limit = int(official.get("valid_response_length", 0)), int(official.get("response_length_limit", 0))
    return format_score(transcript, truncated=bool(official.get("response_truncated", 0.0)),
                        length=length or None, limit=limit or None)


def board_format(rubric: Rubric, trace: TraceBase | None) -> FormatScore | None:
    """The board response's format score, for a rubric in the authors' layout that judges a board's conclusion;
    None for any other rubric or trace."""
    if rubric.layout != "otb" or "conclusion" not in rubric.components:
        return None
    return response_format(trace)


def format_record(fmt: FormatScore) -> dict[str, float | str]:
    """Every official ``format_details`` field and the failure's name (``none`` when it passed)."""
    return {**fmt.fields(), "failure": fmt.failure.name.lower()}


def format_failure(fmt: FormatScore, case_id: str) -> str:
    """Why a response that fails the format is not judged; said in the log too."""
    reason = (f"the response fails the OpenTumorBoard format ({fmt.failure.name.lower().replace('_', ' ')}, format "
              f"score {fmt.score:g}): not judged, as the authors' code judges no such response")
    log.warning("otb_format_failure", case=case_id, failure=fmt.failure.name.lower(), format_score=fmt.score)
    return reason


async def scope_of(rubric: Rubric, requested: Scope | None, case: Case, reference: str | None,
                   relaxed: ChatModel | None, strict: ChatModel, settings: GenerationSettings, model_id: str,
                   cache: Path | None, system: str | None) -> FrozenScope | ScopeFailure | None:
    """The frozen scope a scope-taking rubric judges the case under; None: the judge decides scope (or the rubric
    takes none, or there is no reference to label)."""
    kind = rubric.kind
    if not kind.takes_scope or not reference or decision_scope(requested, case, kind.always_frozen) != "frozen":
        return None
    return await frozen_scope(case, reference, relaxed, strict, settings, model_id, cache=cache, system=system)


def unjudged(rubric: Rubric, components: list[str], reason: str, failed_calls: int | None) -> list[JudgementItem]:
    """Every item of ``components`` not evaluable for ``reason``; ``failed_calls`` counted on the first only."""
    items = [JudgementItem(component=component, criterion=c.id, score=None, not_evaluable=True, reason=reason)
             for component in components for c in rubric.criteria_for(component)]
    return [i.model_copy(update={"failed_calls": failed_calls if n == 0 else (0 if failed_calls is not None else
                                                                              None)})
            for n, i in enumerate(items)]
