"""A run folder's Board Simulation and Specialist Turn responses as the OpenTumorBoard leaderboard reads them.

Each board arm (task1) and each Specialist Turn (task2) is one response of one model: the candidate text the
official evaluation extracts (the board's conclusion by :func:`consilium.otb.extract.conclusion_text` on the whole
transcript; the turn's answer by :func:`consilium.judges.otb_steps.turn_answer` on its raw response), its reference,
its question type and its judgements by rubric. A failed arm is a response with no text, never left out. RUN_DIR is
a cohort folder, or a folder holding cohort folders and single runs (``consilium board`` / ``consilium turn`` under
it, at any depth).

A turn also carries what the authors' generation script counts of it (``run_vllm_qa_evaluation.py``, its
summary's counters): how the generation step read its raw response (``parsed``, ``parsed_after_cleanup``,
``raw_fallback``) or ``errors`` when no response came back (a failed call, a failed arm), and consilium's own
format finding: an answer kept though it broke consilium's answer schema (``schema_failure: record``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from consilium.cases import Case
from consilium.errors import UserError
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.judges.otb_steps import turn_answer
from consilium.judges.record import Judgement
from consilium.otb.answer import parse_answer
from consilium.otb.extract import conclusion_text
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import TRACE_SUFFIX

__all__ = ["Response", "Task", "cohort_folders", "generation_status", "responses"]

Task = Literal["task1", "task2"]


@dataclass(frozen=True)
class Response:
    """One model's response to one item: ``text`` is "" when it has none (a failed arm, no extractable
    conclusion, an empty answer)."""

    task: Task
    model: str  # the summary's model key: a board's names its mode ("model [single]")
    case_id: str
    text: str
    reference: str | None = None
    qa_type: str | None = None
    judgements: dict[str, Judgement] = field(default_factory=dict)
    #: a turn's generation status as the authors' script counts it (parsed, parsed_after_cleanup, raw_fallback,
    #: errors); None for a board
    generation: str | None = None
    #: a turn kept though its answer broke consilium's answer schema (the trace's answer_schema_failure)
    schema_failure: bool = False


def cohort_folders(run_dir: Path) -> list[Path]:
    """RUN_DIR itself when it is a cohort's folder, else the cohort folders directly in it."""
    if RunFolder(run_dir).is_cohort:
        return [run_dir]
    return sorted(p for p in run_dir.iterdir() if p.is_dir() and RunFolder(p).is_cohort)


def board_key(model: str, mode: str) -> str:
    """A board's model key names its mode: a cohort runs both modes of one model, and the official summary
    has one response per model and item."""
    return f"{model} [{mode.removeprefix('board-')}]"


def _from_trace(folder: RunFolder, path: Path, model: str = "") -> Response | None:
    trace = folder.read_trace(path)
    judgements = {j.rubric: j for _, j in folder.judgements_of(path)}
    case = Case.model_validate(trace.case)
    reference = case.reference
    if isinstance(trace, BoardTrace):
        return Response("task1", board_key(model or trace.model, trace.mode), case.id,
                        conclusion_text(trace.transcript), reference.conclusion if reference else None,
                        judgements=judgements)
    if isinstance(trace, TurnTrace):
        found = reference.answer_to(trace.question, trace.role, trace.role_category) if reference else None
        qa_type = reference.answers[found[0]].qa_type if reference and found else None
        official = turn_answer(trace)  # the official extraction from the turn's raw response
        return Response("task2", model or trace.model, case.id, (official.text if official else None) or "",
                        found[1] if found else None, qa_type, judgements, generation_status(trace),
                        trace.answer_schema_failure is not None)
    return None


def generation_status(trace: TurnTrace) -> str:
    """How the authors' generation step reads the raw text of the turn's last answering call
    (:func:`consilium.otb.answer.parse_answer`); ``errors`` when the turn made no such call that answered."""
    calls = [c for c in trace.calls if c.stage == "specialist_turn"]
    return parse_answer(calls[-1].response)[1] if calls else "errors"


def _cohort(folder: RunFolder) -> Iterator[Response]:
    for arm in folder.arms():
        if arm.protocol not in ("board", "turn"):
            continue
        if arm.completed and arm.trace:
            found = _from_trace(folder, folder.trace_location(arm.trace), arm.model)
            if found is not None:
                yield found
        else:  # failed: no response to extract from, counted as the official summary counts an empty one
            task: Task = "task1" if arm.protocol == "board" else "task2"
            yield Response(task, board_key(arm.model, arm.format) if task == "task1" else arm.model,
                           arm.case_id, "", generation="errors" if task == "task2" else None)


def _single_runs(run_dir: Path, cohorts: list[Path]) -> Iterator[Response]:
    inside = [c.resolve() for c in cohorts]
    for path in sorted(run_dir.rglob(f"*{TRACE_SUFFIX}")):
        if any(path.resolve().is_relative_to(c) for c in inside):
            continue
        found = _from_trace(RunFolder(path.parent), path)
        if found is not None:
            yield found


def responses(run_dir: Path) -> list[Response]:
    """Every board arm and Specialist Turn under RUN_DIR, its cohorts' first (each in ``arms.csv``'s order),
    then the single runs' (by path)."""
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    cohorts = cohort_folders(run_dir)
    found = [r for c in cohorts for r in _cohort(RunFolder(c))]
    found += _single_runs(run_dir, cohorts)
    if not found:
        raise UserError(f"{run_dir}: no board arm and no Specialist Turn to report as the OpenTumorBoard "
                        "leaderboard does")
    return found
