"""A consilium cohort folder as the tables read it: ``arms.csv``, the traces it lists, and the judgement
records beside them (or ``judgements.csv`` when no record is left), read one trace at a time."""

from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from consilium.errors import UserError
from consilium.judges.coverage import coverage_of
from consilium.judges.record import read_judgement
from consilium.judges.rubric import Criterion, load_rubric, rubric_names
from consilium.models import Usage
from consilium.models.pricing import stage_costs, trace_cost
from consilium.protocols.arms import arm_protocol, protocols_in
from consilium.protocols.consilium.trace import Trace
from consilium.protocols.registry import read_trace
from consilium.traces.folder import judgement_files
from consilium.traces.schema import TraceBase

__all__ = [
    "CONSILIUM_RUBRIC",
    "STOPS",
    "ArmCost",
    "CohortData",
    "RoleRow",
    "judgement_coverage",
    "load_cohort_data",
    "read_arms",
    "rubric_criteria",
    "trace_location",
]

STOPS = ("consensus", "no_change", "round_limit")
#: The rubric of Tables 6–12 (ai-consilium.txt, Tables 1, 10, 29).
CONSILIUM_RUBRIC = "ai-consilium"


class ArmCost(NamedTuple):
    """One completed arm's dollars as generated (None: unknown; consilium/models/pricing.py), in all and per
    stage, beside its tokens."""

    model: str
    format: str
    case_id: str
    cost: float | None
    stages: dict[str, float | None]
    usage: Usage
    stage_usage: dict[str, Usage]


class RoleRow(NamedTuple):
    """One model-assigned role of one panel: a (model, case) pair, shared by its formats (in a cohort run in
    replicates, a (model, case, replicate): each replicate assigns its own panel)."""

    model: str
    case_id: str
    label: str
    category: str
    category_name: str
    primary: bool
    replicate: str = ""  # the arm's replicate index ("" when the cohort has none)


@dataclass
class CohortData:
    # arms.csv rows; ``model`` is filled in for a failed arm without one (from its model_spec), and
    # ``protocol`` for a row of a folder written before arms.csv had that column (:func:`arm_protocol`)
    arms: list[dict[str, str]]
    # the protocol of the arms (``load_cohort_data(run_dir, protocol=...)``); every table is of one protocol
    protocol: str = "consilium"
    # (model, format, case, round, role, vote, replicate) for every vote of every completed consilium arm
    # (replicate "" when the cohort has none)
    votes: list[tuple[str, str, str, int, str, str, str]] = field(default_factory=list)
    tokens: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)  # (model, format) -> stage tokens
    # one row per judge item: case_id, model, protocol, format, rubric, component, criterion, score ("" when
    # not evaluable), not_evaluable, reason, whole_case ("True" for a whole-case criterion), judgement
    # (the record's file)
    judgements: list[dict[str, str]] = field(default_factory=list)
    judgements_from: str = "none"  # "records", "judgements.csv" or "none"
    unmatched_records: list[Path] = field(default_factory=list)  # records of traces not completed arms
    # the panel of every (model, case, replicate) with a completed arm, once (its formats share it)
    roles: list[RoleRow] = field(default_factory=list)
    costs: list[ArmCost] = field(default_factory=list)  # every completed arm's, in arms.csv's order
    # case id → the case as the traces of its completed arms recorded it (what each rubric's reference needs:
    # a case whose every arm failed is not here)
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)


_ARM_COLUMNS = ("case_id", "format", "status")
# Columns a completed arm needs, and which of them are numbers (None: any text).
_COMPLETED: dict[str, dict[str, type | None]] = {
    "consilium": {"model": None, "trace": None, "stop_reason": None, "rounds": int, "r1_dissent": float},
    "board": {"trace": None, "stop_reason": None, "turns": float, "input_tokens": int, "output_tokens": int,
              "format_exact": float, "format_dense": float},
}
_ANY_COMPLETED: dict[str, type | None] = {"model": None, "trace": None}  # a completed arm of another protocol
_OPTIONAL = {"r1_dissent", "format_exact", "format_dense"}  # may be empty or absent
_JUDGEMENT_COLUMNS = ("case_id", "model", "format", "rubric", "component", "criterion", "score", "not_evaluable")


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
    arms_csv = run_dir / "arms.csv"
    if not arms_csv.is_file():
        raise UserError(f"{run_dir}: no arms.csv (run `consilium cohort` first)")
    arms = _read_csv(arms_csv, _ARM_COLUMNS)
    if not arms:
        raise UserError(f"{arms_csv}: no arms")
    for line, arm in enumerate(arms, 2):
        arm["protocol"] = arm_protocol(arm)
        if not check or arm.get("status") != "completed":
            continue
        for column, kind in _COMPLETED.get(arm["protocol"], _ANY_COMPLETED).items():
            value = arm.get(column)
            if value is None and column in _OPTIONAL:
                continue
            if value is None:
                raise UserError(f"{arms_csv}: missing column {column} (completed arms need it)")
            if value == "" and column not in _OPTIONAL and kind is not None:
                raise UserError(f"{arms_csv}: line {line}: {column}: empty in a completed arm")
            if value and kind is not None:
                try:
                    kind(value)
                except ValueError:
                    raise UserError(f"{arms_csv}: line {line}: {column}: {value!r} is not a number") from None
    return arms


def _name_models(arms: list[dict[str, str]]) -> None:
    """Give every arm its model's id: an arm that failed before its trace was made has only the spec,
    so it takes the id that the spec's other arms recorded (else the spec itself)."""
    ids = {a["model_spec"]: a["model"] for a in arms if a.get("model") and a.get("model_spec")}
    for arm in arms:
        if not arm.get("model"):
            arm["model"] = ids.get(arm.get("model_spec", ""), arm.get("model_spec", ""))


def trace_location(run_dir: Path, recorded: str) -> Path:
    """Where a trace named in arms.csv is: relative to the run folder (as cohorts write it), absolute,
    or relative to where an older cohort ran (then found under the run folder's ``arms/`` if the
    folder has moved)."""
    path = Path(recorded)
    candidates = [] if path.is_absolute() else [run_dir / path]
    if "arms" in path.parts:
        parts = path.parts
        candidates.append(run_dir.joinpath(*parts[len(parts) - 1 - parts[::-1].index("arms"):]))
    candidates.append(path)
    return next((c for c in candidates if c.is_file()), candidates[0])


def _judgement_records(run_dir: Path, by_trace: dict[Path, dict[str, str]],
                       data: CohortData) -> tuple[list[dict[str, str]], bool]:
    """Rows from the ``*.judge.<rubric>.json`` records beside the traces of completed arms of
    ``data.protocol``, and whether there is any record (of any arm)."""
    rows: list[dict[str, str]] = []
    found = False
    for file in judgement_files(run_dir):  # the run's own, not a run's nested in it (an ablation's)
        if file.name.endswith(".trace.json") or not file.is_file():
            continue
        found = True
        judgement = read_judgement(file)
        arm = by_trace.get((file.parent / judgement.trace).resolve())
        if arm is None:
            data.unmatched_records.append(file)
            continue
        if arm["protocol"] != data.protocol:  # another protocol's arm: its own part reads it
            continue
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
    return rows, found


def _finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _judgements_csv(path: Path) -> list[dict[str, str]]:
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


def _read_trace_data(data: CohortData, arm: dict[str, str], trace: TraceBase,
                     panels: set[tuple[str, str, str]]) -> None:
    """The trace's tokens (any protocol's) and, of a consilium trace, its votes and its panel."""
    model, fmt, case, replicate = arm["model"], arm["format"], arm["case_id"], arm.get("replicate") or ""
    counter = data.tokens.setdefault((model, fmt), Counter())
    for stage, usage in trace.usage.by_stage.items():
        counter[f"{stage}:input"] += usage.input_tokens
        counter[f"{stage}:output"] += usage.output_tokens
    counter["cases"] += 1
    data.cases.setdefault(case, trace.case)
    data.costs.append(ArmCost(model, fmt, case, trace_cost(trace), stage_costs(trace), trace.usage.total,
                              trace.usage.by_stage))
    if not isinstance(trace, Trace):
        return
    for rnd in trace.rounds:
        for vote in rnd.votes:
            data.votes.append((model, fmt, case, rnd.round, vote.role, vote.vote, replicate))
    if (model, case, replicate) not in panels and trace.roles:
        panels.add((model, case, replicate))
        data.roles += [RoleRow(model, case, r.label, r.category, r.category_name, r.primary, replicate)
                       for r in trace.roles]


def _of_protocol(rows: list[dict[str, str]], arms: list[dict[str, str]], protocol: str) -> list[dict[str, str]]:
    """The judgements.csv rows of one protocol's arms (a row without a ``protocol`` cell: its arm's)."""
    owner = {(a["case_id"], a["model"], a["format"]): a["protocol"] for a in arms}
    for row in rows:
        row["protocol"] = row.get("protocol") or owner.get((row["case_id"], row["model"], row["format"]),
                                                           arm_protocol(row))
    return [r for r in rows if r["protocol"] == protocol]


def load_cohort_data(run_dir: Path, protocol: str | None = None) -> CohortData:
    """The arms of one protocol in RUN_DIR (by default its only one: an arms.csv mixing protocols needs
    ``protocol``, so that no table mixes them), their traces' data and their judge items."""
    every = read_arms(run_dir)
    _name_models(every)
    present = protocols_in(every)
    if protocol is None:
        if len(present) > 1:
            raise UserError(f"{run_dir / 'arms.csv'}: arms of several protocols ({', '.join(present)}): "
                            "read one protocol at a time")
        protocol = present[0]
    data = CohortData(arms=[a for a in every if a["protocol"] == protocol], protocol=protocol)
    by_trace: dict[Path, dict[str, str]] = {}
    panels: set[tuple[str, str, str]] = set()
    for arm in every:
        if not arm.get("trace") or arm.get("status") != "completed":
            continue
        location = trace_location(run_dir, arm["trace"])
        by_trace[location.resolve()] = arm  # every protocol's: a record of another's arm is not unmatched
        if arm["protocol"] == protocol:
            _read_trace_data(data, arm, read_trace(location), panels)
    # The records are the source of truth: judgements made after the cohort count, and a stale
    # judgements.csv adds nothing. The CSV is read only when no record is left.
    records, found = _judgement_records(run_dir, by_trace, data)
    judged = run_dir / "judgements.csv"
    if found:
        data.judgements, data.judgements_from = records, "records"
    elif judged.is_file():
        data.judgements, data.judgements_from = _of_protocol(_judgements_csv(judged), every, protocol), \
            "judgements.csv"
    return data


def judgement_coverage(data: CohortData) -> list[dict[str, Any]]:
    """:func:`consilium.judges.coverage.coverage_of` over the cohort's judge items."""
    rows = coverage_of((r["rubric"], r["component"], r["not_evaluable"].strip().lower() == "true",
                        r.get("reason") or None, bool(r.get("shortened_input"))) for r in data.judgements)
    jury = [r for r in data.judgements if (r.get("jury_judges") or "").strip()]  # a jury's: its votes left out
    for row in (row for row in rows if any(r["rubric"] == row["rubric"] for r in jury)):
        row["jury_votes_left_out"] = sum(int(r["jury_not_evaluable"] or 0) for r in jury
                                         if (r["rubric"], r["component"]) == (row["rubric"], row["component"]))
    return rows
