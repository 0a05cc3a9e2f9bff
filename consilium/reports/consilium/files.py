"""The files of a consilium cohort folder, read and checked: ``arms.csv``, where the traces it lists are,
the judgement records beside them and ``judgements.csv``. :mod:`.data` assembles them into the tables'
:class:`~consilium.reports.consilium.data.CohortData`."""

from __future__ import annotations

import csv
import math
from functools import cache
from pathlib import Path
from typing import NamedTuple

from consilium.errors import UserError
from consilium.graphs.arms import arm_protocol, completed_columns
from consilium.judges.cost import JudgeCost, judge_costs
from consilium.judges.record import read_judgement
from consilium.judges.rubric import Criterion, load_rubric, rubric_names
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import is_trace

__all__ = [
    "JudgementRecords",
    "judgement_records",
    "read_arms",
    "read_judgements_csv",
    "rubric_criteria",
]

_ARM_COLUMNS = ("case_id", "format", "status")
_JUDGEMENT_COLUMNS = ("case_id", "model", "format", "rubric", "component", "criterion", "score", "not_evaluable")


class JudgementRecords(NamedTuple):
    """What the ``*.judge.<rubric>.json`` records of a run folder hold for one protocol's arms."""

    rows: list[dict[str, str]]  # one per judge item of a completed arm of the protocol
    found: bool  # whether there is any record (of any arm)
    unmatched: list[Path]  # records of traces not completed arms
    # each judge's calls of each record of the protocol's arms, with its arm's arms.csv row (consilium/judges/cost.py)
    costs: list[tuple[dict[str, str], JudgeCost]]


@cache
def rubric_criteria(rubric: str) -> dict[str, Criterion]:
    """A shipped rubric's criteria by id, in the rubric's order (empty for a rubric not shipped)."""
    return {c.id: c for c in load_rubric(rubric).criteria} if rubric in rubric_names() else {}


def _read_csv(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not readable ({exc})") from None
    try:
        reader = csv.DictReader(text.splitlines())
        rows = list(reader)
    except csv.Error as exc:
        raise UserError(f"{path}: not valid CSV ({exc})") from None
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}")
    for line, row in enumerate(rows, 2):
        if None in row:  # more cells than the header names
            raise UserError(f"{path}: line {line}: more cells than columns")
    return rows


def read_arms(run_dir: Path, *, check: bool = True) -> list[dict[str, str]]:
    """The rows of ``RUN_DIR/arms.csv``, each with its ``protocol`` (:func:`arm_protocol`); with ``check``,
    a completed arm must have every column the tables of its protocol read, with numbers where numbers
    belong."""
    arms_csv = RunFolder(run_dir).arms_csv
    if not arms_csv.is_file():
        raise UserError(f"{run_dir}: no {arms_csv.name} (run `consilium cohort` first)")
    arms = _read_csv(arms_csv, _ARM_COLUMNS)
    if not arms:
        raise UserError(f"{arms_csv}: no arms")
    for line, arm in enumerate(arms, 2):
        arm["protocol"] = arm_protocol(arm)
        if not check or arm.get("status") != "completed":
            continue
        needed, optional = completed_columns(arm["protocol"])  # as the protocol declares (Protocol.analyses)
        for column, kind in needed.items():
            value = arm.get(column)
            if value is None and column in optional:
                continue
            if value is None:
                raise UserError(f"{arms_csv}: missing column {column} (completed arms need it)")
            if value == "" and column not in optional and kind is not None:
                raise UserError(f"{arms_csv}: line {line}: {column}: empty in a completed arm")
            if value and kind is not None:
                try:
                    kind(value)
                except ValueError:
                    raise UserError(f"{arms_csv}: line {line}: {column}: {value!r} is not a number") from None
    return arms


def judgement_records(run_dir: Path, by_trace: dict[Path, dict[str, str]], protocol: str) -> JudgementRecords:
    """Rows from the ``*.judge.<rubric>.json`` records beside the traces of completed arms of ``protocol``
    (``by_trace``: every completed arm by its resolved trace path, of every protocol, so that a record of
    another protocol's arm is not unmatched)."""
    rows: list[dict[str, str]] = []
    unmatched: list[Path] = []
    costs: list[tuple[dict[str, str], JudgeCost]] = []
    found = False
    for file in RunFolder(run_dir).judgement_files():  # the run's own, not a run's nested in it (an ablation's)
        if is_trace(file) or not file.is_file():
            continue
        found = True
        judgement = read_judgement(file)
        arm = by_trace.get((file.parent / judgement.trace).resolve())
        if arm is None:
            unmatched.append(file)
            continue
        if arm["protocol"] != protocol:  # another protocol's arm: its own part reads it
            continue
        costs += [(arm, cost) for cost in judge_costs(judgement)]
        criteria = rubric_criteria(judgement.rubric)
        for item in judgement.items:
            # Whole-case or C1-C8: the shipped rubric decides; the record's own note only for other rubrics.
            known = criteria.get(item.criterion)
            whole_case = known.whole_case if known is not None else bool(item.detail.get("whole_case"))
            rows.append({"case_id": arm["case_id"], "model": arm["model"], "protocol": arm["protocol"],
                         "format": arm["format"], "replicate": arm.get("replicate") or "",
                         "rubric": judgement.rubric, "component": item.component, "criterion": item.criterion,
                         "score": "" if item.score is None else str(item.score),
                         "calibrated_score": "" if item.calibrated_score is None else str(item.calibrated_score),
                         "not_evaluable": str(item.not_evaluable), "reason": item.reason or "",
                         "whole_case": str(whole_case),
                         "judgement": str(file.relative_to(run_dir)),
                         **({"jury_judges": str(item.verdict.judges), "jury_not_evaluable":
                             str(item.verdict.not_evaluable)} if item.verdict else {})})
    return JudgementRecords(rows, found, unmatched, costs)


def _finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def read_judgements_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a cohort's ``judgements.csv``, their scores checked as finite numbers and each with its
    ``whole_case`` (from the shipped rubric when the file is older than that column)."""
    rows = _read_csv(path, _JUDGEMENT_COLUMNS)
    for line, row in enumerate(rows, 2):
        for column in ("score", "calibrated_score"):  # calibrated_score: a column of judge --calibration
            text = row.get(column) or ""
            if text and not _finite_number(text):
                raise UserError(f"{path}: line {line}: {column}: {text!r} is not a number")
        if not row.get("whole_case"):  # older files: the shipped rubric says which criteria are whole-case
            criterion = rubric_criteria(row["rubric"]).get(row["criterion"])
            row["whole_case"] = str(bool(criterion and criterion.whole_case))
    return rows
