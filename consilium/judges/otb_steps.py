"""What the OpenTumorBoard authors' code does before it judges a board: decide whether the response is judged
at all, and fix the decisions' scope before any candidate is read (frozen_scope.py).

A board's response is its transcript (``<discussion>…</discussion>`` and ``<conclusion>…</conclusion>``),
scored by :func:`consilium.otb.format_score.format_score` with its truncation, length and limit as the board
recorded them, and recorded with every judgement. The authors gate in two ways, and each rubric follows the
code that produced its numbers:

- the leaderboard's judges (conclusion alignment, four decisions: ``scripts/evaluation/judge``) judge every
  response whose conclusion the official extraction finds (:func:`consilium.otb.extract.conclusion_text`);
  one with none is a format failure, scored at the floor by the summary and never sent to a judge;
- the reward's consistency judge (``training/verl_otb/reward.py``) judges nothing that fails the format
  score (truncated, a severe loop, a missing block).

A Specialist Turn's answer is judged as the batch builder finds it: the official answer extraction
(:mod:`consilium.otb.answer`) on the raw text of the turn's last answering call, not consilium's own reading of
it; a turn with no answer so found is a format failure, never sent to a judge.

Either way an unjudged response leaves every item not evaluable, with the reason named, and no call asked.
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
from consilium.otb.answer import Answer, official_answer
from consilium.otb.extract import conclusion_text
from consilium.otb.format_score import FormatScore, format_score
from consilium.traces.schema import TraceBase

__all__ = ["SCOPE_STAGE", "answer_failure", "board_format", "format_failure", "format_record", "response_format",
           "scope_of", "turn_answer", "unjudged"]

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


def turn_answer(trace: TraceBase | None) -> Answer | None:
    """A Specialist Turn's answer as the official evaluation extracts it from the raw text of the turn's last
    ``specialist_turn`` call (the recorded answer where the trace holds no call); None for another trace."""
    if trace is None or getattr(trace, "kind", None) != "turn":
        return None
    calls = [c for c in trace.calls if c.stage == "specialist_turn"]
    return official_answer(calls[-1].response if calls else getattr(trace, "answer", None))


def answer_failure(answer: Answer, case_id: str) -> str | None:
    """Why a Specialist Turn is not judged (None when it is); said in the log too."""
    if answer.text:
        return None
    log.warning("otb_format_failure", case=case_id, failure=answer.method)
    return (f"the turn has no answer the official extraction can find ({answer.method}): a format failure, not "
            "judged (the leaderboard scores it at the floor)")


def format_record(fmt: FormatScore) -> dict[str, float | str]:
    """Every official ``format_details`` field and the failure's name (``none`` when it passed)."""
    return {**fmt.fields(), "failure": fmt.failure.name.lower()}


def format_failure(rubric: Rubric, fmt: FormatScore, transcript: str, case_id: str) -> str | None:
    """Why the board response is not judged by ``rubric`` (None when it is); said in the log too."""
    if rubric.kind.always_frozen:  # the reward's consistency judge: any format failure
        if not fmt.failure:
            return None
        reason = (f"the response fails the OpenTumorBoard format ({fmt.failure.name.lower().replace('_', ' ')}, "
                  f"format score {fmt.score:g}): not judged, as the authors' reward judges no such response")
    elif conclusion_text(transcript):
        return None
    else:
        reason = ("the response has no conclusion the official evaluation can extract: a format failure, not "
                  "judged (the leaderboard scores it at the floor)")
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
