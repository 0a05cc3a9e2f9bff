"""A board's ``match`` and ``reward`` as the authors' RL code composes them (consilium/otb/reward.py), from its three
judgements: conclusion alignment, the four decisions under the frozen scope, and the consistency judge.

A response that fails the format is never judged: its reward follows from the format score alone (match −.20).
Otherwise the reward needs all three judgements, the four decisions judged under a frozen scope (the authors'
reward is defined on it) and every score the reward reads; where one is missing the record says which, and
holds no number. The record is written beside the trace, ``<trace>.otb-reward.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from consilium.fileio import write_text_atomic
from consilium.judges.otb_steps import response_format
from consilium.judges.record import Judgement, read_judgement
from consilium.judges.scope_labels import DIMENSIONS
from consilium.otb.format_score import format_score
from consilium.otb.reward import Judged, reward
from consilium.runfolder.layout import board_reward_path as reward_path
from consilium.runfolder.layout import judgement_path
from consilium.traces.schema import TraceBase

__all__ = ["REWARD_RUBRICS", "board_reward", "record_board_reward", "reward_path", "write_board_reward",
           "write_judged"]

#: The rubric of each judged term of the reward.
REWARD_RUBRICS = {"alignment": "otb-conclusion-alignment", "decisions": "otb-four-decision",
                  "consistency": "otb-consistency"}


def _score(judgement: Judgement, criterion: str) -> int | None:
    found = [i.score for i in judgement.items if i.criterion == criterion and i.component == "conclusion"]
    return int(found[0]) if found and found[0] is not None else None


def _judged(judgements: Mapping[str, Judgement]) -> Judged | str:
    """The three judges' answers, or why the reward cannot be composed from them."""
    missing = [rubric for rubric in REWARD_RUBRICS.values() if rubric not in judgements]
    if missing:
        return f"not judged by {', '.join(missing)}"
    alignment = _score(judgements[REWARD_RUBRICS["alignment"]], "conclusion_alignment")
    decisions, consistency = judgements[REWARD_RUBRICS["decisions"]], judgements[REWARD_RUBRICS["consistency"]]
    if decisions.frozen_scope is None:
        return "the four decisions were judged without a frozen scope (--scope judge); the reward is defined on it"
    in_scope = [name for name in DIMENSIONS if name not in decisions.frozen_scope.locked]
    scores = {name: _score(decisions, name) for name in in_scope}
    agreement = _score(consistency, "discussion_conclusion_consistency")
    lost = [name for name, s in (("conclusion_alignment", alignment), *scores.items(),
                                 ("discussion_conclusion_consistency", agreement)) if s is None]
    if lost:
        return f"not evaluable: {', '.join(lost)}"
    assert alignment is not None and agreement is not None
    return Judged(alignment=alignment, decisions={k: v for k, v in scores.items() if v is not None},
                  consistency=agreement)


def board_reward(trace: TraceBase, judgements: Mapping[str, Judgement]) -> dict[str, Any]:
    """The reward record of a board trace from its judgements by rubric name."""
    fmt = response_format(trace) or format_score("")
    base: dict[str, Any] = {"case_id": trace.case_id, "trace_run_id": trace.run_id,
                            "format_score": fmt.score, "format_failure": fmt.failure.name.lower(),
                            "judgements": {name: {"judge_model": j.judge_model, "prompt_hash": j.prompt_hash}
                                           for name, j in sorted(judgements.items())}}
    if fmt.failure:
        made = reward(fmt, None)
    else:
        judged = _judged(judgements)
        if isinstance(judged, str):
            return {**base, "judged": False, "match": None, "reward": None, "missing": judged}
        made = reward(fmt, judged)
    return {**base, "judged": made.judged, "alignment": made.alignment, "decisions": made.decisions,
            "consistency": made.consistency, "match": made.match, "reward": made.reward, "missing": None}


def write_board_reward(trace_path: Path, trace: TraceBase, judgements: Mapping[str, Judgement]) -> Path | None:
    """Write the board's reward record beside its trace once the rubrics of the reward have judged it (or the
    response failed the format); None, nothing written, for a trace that is not a board's or has not yet been
    judged by any of them."""
    if not isinstance(getattr(trace, "transcript", None), str) or not set(judgements) & set(REWARD_RUBRICS.values()):
        return None
    import json

    return write_text_atomic(reward_path(trace_path), json.dumps(board_reward(trace, judgements), indent=2) + "\n")


def record_board_reward(trace_path: Path, trace: TraceBase, rubric: str) -> Path | None:
    """After ``rubric`` judged the trace at ``trace_path``: its reward record rewritten from the judgement files
    of the reward's rubrics found beside it; None where ``rubric`` is not one of them or the trace is not a
    board's."""
    if rubric not in REWARD_RUBRICS.values():
        return None
    found = {name: read_judgement(path) for name in REWARD_RUBRICS.values()
             if (path := judgement_path(trace_path, name)).is_file()}
    return write_board_reward(trace_path, trace, found)


def write_judged(trace_path: Path, trace: TraceBase, rubric: str, judgement: Judgement) -> Path:
    """Write ``rubric``'s judgement beside the trace at ``trace_path`` and then, for a board judged by a rubric of
    the reward, its reward record: what every judging path does after each judgement (``consilium judge`` and the
    API's ``judge_run``, ``cohort --judge``), so a board's reward is beside it however it was judged. Returns the
    judgement's file."""
    out = write_text_atomic(judgement_path(trace_path, rubric), judgement.model_dump_json(indent=2) + "\n")
    record_board_reward(trace_path, trace, rubric)
    return out
