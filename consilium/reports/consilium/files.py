"""The files of a consilium cohort folder, read and checked: ``arms.csv``, where the traces it lists are,
the judgement records beside them and ``judgements.csv``. :mod:`.data` assembles them into the tables'
:class:`~consilium.reports.consilium.data.CohortData`."""

from __future__ import annotations

import csv
import io
import math
from functools import cache
from pathlib import Path
from typing import NamedTuple

from consilium.errors import UserError
from consilium.graphs.arms import arm_protocol, completed_columns, protocols_in
from consilium.judges.cost import JudgeCost, judge_costs
from consilium.judges.record import read_judgement
from consilium.judges.rubric import Criterion, load_rubric, rubric_names
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import is_trace
from consilium.runfolder.rows import ArmRow, JudgementRow, read_rows, text_of

__all__ = [
    "JudgementRecords",
    "judgement_records",
    "protocols_of",
    "read_arms",
    "read_arms_as_written",
    "read_judgements_csv",
    "rubric_criteria",
]

_ARM_COLUMNS = ("case_id", "format", "status")
_JUDGEMENT_COLUMNS = ("case_id", "model", "format", "rubric", "component", "criterion", "score", "not_evaluable")


class JudgementRecords(NamedTuple):
    """What the ``*.judge.<rubric>.json`` records of a run folder hold for one protocol's arms."""

    rows: list[JudgementRow]  # one per judge item of a completed arm of the protocol
    found: bool  # whether there is any record (of any arm)
    unmatched: list[Path]  # records of traces not completed arms
    # each judge's calls of each record of the protocol's arms, with its arm's arms.csv row (consilium/judges/cost.py)
    costs: list[tuple[ArmRow, JudgeCost]]


@cache
def rubric_criteria(rubric: str) -> dict[str, Criterion]:
    """A shipped rubric's criteria by id, in the rubric's order (empty for a rubric not shipped)."""
    return {c.id: c for c in load_rubric(rubric).criteria} if rubric in rubric_names() else {}


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not readable ({exc})") from None


def _check_header(path: Path, text: str, required: tuple[str, ...]) -> None:
    """A table short of a column its rows need is one line naming the columns (before any row is read)."""
    try:
        header = next(csv.reader(io.StringIO(text, newline="")), [])
    except csv.Error as exc:
        raise UserError(f"{path}: not valid CSV ({exc})") from None
    missing = [c for c in required if c not in header]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}")


def _check_completed(arms_csv: Path, arms: list[ArmRow]) -> None:
    """A completed arm must have every column the tables of its protocol read, with numbers where numbers
    belong (as the protocol declares: Protocol.analyses)."""
    for line, arm in enumerate(arms, 2):
        if not arm.completed:
            continue
        needed, optional = completed_columns(arm.protocol)
        cells = arm.cells()
        for column, kind in needed.items():
            if column not in cells and column in optional:
                continue
            if column not in cells:
                raise UserError(f"{arms_csv}: missing column {column} (completed arms need it)")
            value = cells[column]
            empty = value is None or value == ""
            if empty and column not in optional and kind is not None:
                raise UserError(f"{arms_csv}: line {line}: {column}: empty in a completed arm")
            if not empty and kind is not None:
                try:
                    kind(text_of(value))  # the cell as written: 2.5 is no count of rounds
                except ValueError:
                    raise UserError(f"{arms_csv}: line {line}: {column}: {text_of(value)!r} is not a number") \
                        from None


def read_arms(run_dir: Path, *, check: bool = True, named: bool = True) -> list[ArmRow]:
    """The rows of ``RUN_DIR/arms.csv``, typed (:meth:`RunFolder.arms`: with ``named``, each with its
    ``protocol`` and its model named); with ``check``, a completed arm must have every column the tables of its
    protocol read, with numbers where numbers belong."""
    folder = RunFolder(run_dir)
    arms_csv = folder.arms_csv
    if not arms_csv.is_file():
        raise UserError(f"{run_dir}: no {arms_csv.name} (run `consilium cohort` first)")
    _check_header(arms_csv, _text(arms_csv), _ARM_COLUMNS)
    arms = folder.arms(named=named)
    if not arms:
        raise UserError(f"{arms_csv}: no arms")
    if check:
        _check_completed(arms_csv, arms)
    return arms


def protocols_of(arms: list[ArmRow]) -> list[str]:
    """The protocols of some typed arms (their ``protocol`` filled in), in the registry's order."""
    return protocols_in([{"protocol": a.protocol, "format": a.format} for a in arms])


def read_arms_as_written(run_dir: Path) -> list[ArmRow]:
    """The rows of ``RUN_DIR/arms.csv``, typed, each with its ``protocol`` but its ``model`` as written (an arm
    that failed before its trace was made keeps an empty one): for the viewer, which shows such an arm by its
    spec (checked as :func:`read_arms`)."""
    return [arm if arm.protocol else arm.model_copy(update={"protocol": arm_protocol(arm.cells())})
            for arm in read_arms(run_dir, check=False, named=False)]


def judgement_records(run_dir: Path, by_trace: dict[Path, ArmRow], protocol: str) -> JudgementRecords:
    """Rows from the ``*.judge.<rubric>.json`` records beside the traces of completed arms of ``protocol``
    (``by_trace``: every completed arm by its resolved trace path, of every protocol, so that a record of
    another protocol's arm is not unmatched)."""
    rows: list[JudgementRow] = []
    unmatched: list[Path] = []
    costs: list[tuple[ArmRow, JudgeCost]] = []
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
        if arm.protocol != protocol:  # another protocol's arm: its own part reads it
            continue
        costs += [(arm, cost) for cost in judge_costs(judgement)]
        criteria = rubric_criteria(judgement.rubric)
        for item in judgement.items:
            # Whole-case or C1-C8: the shipped rubric decides; the record's own note only for other rubrics.
            known = criteria.get(item.criterion)
            whole_case = known.whole_case if known is not None else bool(item.detail.get("whole_case"))
            rows.append(JudgementRow(
                case_id=arm.case_id, model=arm.model, protocol=arm.protocol, format=arm.format,
                replicate=arm.replicate, rubric=judgement.rubric, component=item.component,
                criterion=item.criterion, score=item.score, calibrated_score=item.calibrated_score,
                not_evaluable=item.not_evaluable, reason=item.reason or "", whole_case=whole_case,
                judgement=str(file.relative_to(run_dir)),
                **({"jury_judges": item.verdict.judges, "jury_not_evaluable": item.verdict.not_evaluable}
                   if item.verdict else {})))
    return JudgementRecords(rows, found, unmatched, costs)


def _finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _refuse_scores(path: Path, text: str) -> None:
    """A score cell that is not a finite number, named as one line (the typed reader's own words otherwise)."""
    for line, row in enumerate(csv.DictReader(io.StringIO(text, newline="")), 2):
        for column in ("score", "calibrated_score"):  # calibrated_score: a column of judge --calibration
            cell = row.get(column) or ""
            if cell and not _finite_number(cell):
                raise UserError(f"{path}: line {line}: {column}: {cell!r} is not a number")


def read_judgements_csv(path: Path) -> list[JudgementRow]:
    """The rows of a cohort's ``judgements.csv``, typed (scores finite numbers or None), each with its
    ``whole_case`` (from the shipped rubric when the file is older than that column)."""
    text = _text(path)
    _check_header(path, text, _JUDGEMENT_COLUMNS)
    try:
        rows = read_rows(path, JudgementRow, text=text)
    except UserError:
        _refuse_scores(path, text)
        raise
    return [row if row.whole_case is not None else row.model_copy(update={"whole_case": _whole_case(row)})
            for row in rows]


def _whole_case(row: JudgementRow) -> bool:
    """Older files: the shipped rubric says which criteria are whole-case."""
    criterion = rubric_criteria(row.rubric).get(row.criterion)
    return bool(criterion and criterion.whole_case)
