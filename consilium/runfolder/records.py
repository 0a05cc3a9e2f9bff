"""A run folder's records as rows: each judge item of each judgement record beside a completed arm's trace,
and each model call of each arm's trace and of its judgements, with the arm's case, model, protocol, format
and replicate."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import load_rubric, rubric_names
from consilium.runfolder.rows import ArmRow, JudgementRow
from consilium.traces.schema import TraceBase

__all__ = ["CALL_COLUMNS", "Folder", "call_rows", "judgement_rows", "out_of_scope"]


class Folder(Protocol):
    """What these rows read of a :class:`~consilium.runfolder.folder.RunFolder`."""

    def arms(self, *, named: bool = True) -> list[ArmRow]: ...
    def judgements(self) -> list[JudgementRow]: ...
    def judgement_rows(self) -> list[JudgementRow]: ...
    def trace_location(self, recorded: str) -> Path: ...
    def read_trace(self, path: Path) -> TraceBase: ...
    def judgements_of(self, trace: Path) -> list[tuple[Path, Judgement]]: ...
    def relative(self, path: Path) -> str: ...

#: One row per model call: the arm's keys, then the call's own (``source``: ``panel`` or ``judge:<rubric>``).
CALL_COLUMNS = ("case_id", "model", "protocol", "format", "replicate", "status", "source", "index", "stage", "role",
                "round", "call_model", "input_tokens", "output_tokens", "cached_tokens", "latency_ms", "cached",
                "error")


def out_of_scope(item: JudgementItem) -> bool:
    """Whether a judge item is a decision out of scope: the four-decision rubric's −1 (its items carry
    their ``scope``), which is no score (opentumorboard.txt App. C.3, E.2)."""
    return item.score == -1 and "scope" in item.detail


def _whole_case(rubric: str) -> dict[str, bool]:
    return {c.id: c.whole_case for c in load_rubric(rubric).criteria} if rubric in rubric_names() else {}


def _traced(folder: Folder, *, completed: bool) -> list[ArmRow]:
    return [arm for arm in folder.arms() if arm.trace and (arm.completed or not completed)]


def judgement_rows(folder: Folder) -> list[JudgementRow]:
    """One row per judge item of a completed arm: from the judgement records when there is any, else
    ``judgements.csv``'s rows (a not-evaluable item is a row with ``not_evaluable`` and no score)."""
    rows: list[JudgementRow] = []
    found = False
    known: dict[str, dict[str, bool]] = {}
    for arm in _traced(folder, completed=True):
        for file, judgement in folder.judgements_of(folder.trace_location(arm.trace)):
            found = True
            whole = known.setdefault(judgement.rubric, _whole_case(judgement.rubric))
            for item in judgement.items:
                rows.append(JudgementRow(
                    case_id=arm.case_id, model=arm.model, protocol=arm.protocol, format=arm.format,
                    replicate=arm.replicate, rubric=judgement.rubric, component=item.component,
                    criterion=item.criterion, score=item.score, calibrated_score=item.calibrated_score,
                    not_evaluable=item.not_evaluable, reason=item.reason or "",
                    whole_case=whole.get(item.criterion, bool(item.detail.get("whole_case"))),
                    judgement=folder.relative(file),
                    jury_judges=item.verdict.judges if item.verdict else None,
                    jury_not_evaluable=item.verdict.not_evaluable if item.verdict else None))
    return rows if found else folder.judgements()


def call_rows(folder: Folder) -> list[dict[str, Any]]:
    """One row per model call of every arm with a trace, a failed one's included (the calls it made before
    it failed): the panel's, from its trace, and each judge's, from its judgement records; a call whose answer
    was not used keeps its ``error``."""
    rows: list[dict[str, Any]] = []
    for arm in _traced(folder, completed=False):
        path = folder.trace_location(arm.trace)
        keys = {"case_id": arm.case_id, "model": arm.model, "protocol": arm.protocol, "format": arm.format,
                "replicate": arm.replicate, "status": arm.status}
        sources = [("panel", folder.read_trace(path).calls)]
        sources += [(f"judge:{j.rubric}", j.calls) for _, j in folder.judgements_of(path)]
        for source, calls in sources:
            rows += [{**keys, "source": source, "index": c.index, "stage": c.stage, "role": c.role,
                      "round": c.round, "call_model": c.model, "input_tokens": c.usage.input_tokens,
                      "output_tokens": c.usage.output_tokens, "cached_tokens": c.usage.cached_tokens,
                      "latency_ms": c.latency_ms, "cached": c.cached, "error": c.error} for c in calls]
    return rows
