"""A consilium cohort folder as the tables read it: ``arms.csv``, the traces it lists, and the judgement
records beside them (or ``judgements.csv`` when no record is left), read one trace at a time and assembled
into one protocol's :class:`CohortData` (the files themselves are read and checked in :mod:`.files`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from consilium.errors import UserError
from consilium.graphs.arms import arm_protocol
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace
from consilium.judges.coverage import coverage_of
from consilium.models import Usage
from consilium.models.pricing import stage_costs, trace_cost
from consilium.reports.consilium.files import judgement_records, protocols_of, read_arms, read_judgements_csv
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import JUDGEMENTS_CSV
from consilium.runfolder.rows import ArmRow, JudgementRow
from consilium.traces.schema import TraceBase

__all__ = [
    "CONSILIUM_RUBRIC",
    "STOPS",
    "ArmCost",
    "CohortData",
    "JudgeArmCost",
    "RoleRow",
    "judgement_coverage",
    "load_cohort_data",
    "replicate_key",
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


class JudgeArmCost(NamedTuple):
    """One judge's calls on one completed arm's trace with one rubric (consilium/judges/cost.py): tokens as
    generated, dollars (None: unknown) and the calls that failed without an answer."""

    model: str
    format: str
    case_id: str
    rubric: str
    judge_model: str
    usage: Usage
    cost: float | None
    failed_calls: int


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


def replicate_key(row: ArmRow | JudgementRow) -> str:
    """A row's replicate as the tables key and show it: its index, "" when the cohort has none."""
    return "" if row.replicate is None else str(row.replicate)


@dataclass
class CohortData:
    # arms.csv rows, typed (:meth:`RunFolder.arms`): ``model`` filled in for a failed arm without one (from its
    # model_spec), and ``protocol`` for a row of a folder written before arms.csv had that column
    arms: list[ArmRow]
    # the protocol of the arms (``load_cohort_data(run_dir, protocol=...)``); every table is of one protocol
    protocol: str = "consilium"
    # (model, format, case, round, role, vote, replicate) for every vote of every completed consilium arm
    # (replicate "" when the cohort has none)
    votes: list[tuple[str, str, str, int, str, str, str]] = field(default_factory=list)
    tokens: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)  # (model, format) -> stage tokens
    # one typed row per judge item (score None when not evaluable; whole_case True for a whole-case criterion;
    # judgement: the record's file)
    judgements: list[JudgementRow] = field(default_factory=list)
    judgements_from: str = "none"  # "records", "judgements.csv" or "none"
    unmatched_records: list[Path] = field(default_factory=list)  # records of traces not completed arms
    # the panel of every (model, case, replicate) with a completed arm, once (its formats share it)
    roles: list[RoleRow] = field(default_factory=list)
    costs: list[ArmCost] = field(default_factory=list)  # every completed arm's, in arms.csv's order
    # each judge's calls per rubric on each completed arm, from the judgement records (none from judgements.csv)
    judge_costs: list[JudgeArmCost] = field(default_factory=list)
    # case id → the case as the traces of its completed arms recorded it (what each rubric's reference needs:
    # a case whose every arm failed is not here)
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)


def _read_trace_data(data: CohortData, arm: ArmRow, trace: TraceBase,
                     panels: set[tuple[str, str, str]]) -> None:
    """The trace's tokens (any protocol's) and, of a consilium trace, its votes and its panel."""
    model, fmt, case, replicate = arm.model, arm.format, arm.case_id, replicate_key(arm)
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


def _of_protocol(rows: list[JudgementRow], arms: list[ArmRow], protocol: str) -> list[JudgementRow]:
    """The judgements.csv rows of one protocol's arms (a row without a ``protocol`` cell: its arm's)."""
    owner = {(a.case_id, a.model, a.format): a.protocol for a in arms}
    named = [r if r.protocol else r.model_copy(update={"protocol": owner.get(
        (r.case_id, r.model, r.format), arm_protocol(r.cells()))}) for r in rows]
    return [r for r in named if r.protocol == protocol]


def load_cohort_data(run_dir: Path, protocol: str | None = None) -> CohortData:
    """The arms of one protocol in RUN_DIR (by default its only one: an arms.csv mixing protocols needs
    ``protocol``, so that no table mixes them), their traces' data and their judge items."""
    folder = RunFolder(run_dir)
    every = read_arms(run_dir)
    present = protocols_of(every)
    if protocol is None:
        if len(present) > 1:
            raise UserError(f"{folder.arms_csv}: arms of several protocols ({', '.join(present)}): "
                            "read one protocol at a time")
        protocol = present[0]
    data = CohortData(arms=[a for a in every if a.protocol == protocol], protocol=protocol)
    by_trace: dict[Path, ArmRow] = {}
    panels: set[tuple[str, str, str]] = set()
    for arm in every:
        if not arm.trace or not arm.completed:
            continue
        location = folder.trace_location(arm.trace)
        by_trace[location.resolve()] = arm  # every protocol's: a record of another's arm is not unmatched
        if arm.protocol == protocol:
            _read_trace_data(data, arm, read_trace(location), panels)
    # The records are the source of truth: judgements made after the cohort count, and a stale
    # judgements.csv adds nothing. The CSV is read only when no record is left.
    records = judgement_records(run_dir, by_trace, protocol)
    data.unmatched_records += records.unmatched
    judged = folder.judgements_csv
    data.judge_costs = [JudgeArmCost(arm.model, arm.format, arm.case_id, *cost) for arm, cost in records.costs]
    if records.found:
        data.judgements, data.judgements_from = records.rows, "records"
    elif judged.is_file():
        data.judgements, data.judgements_from = _of_protocol(read_judgements_csv(judged), every, protocol), \
            JUDGEMENTS_CSV
    return data


def judgement_coverage(data: CohortData) -> list[dict[str, Any]]:
    """:func:`consilium.judges.coverage.coverage_of` over the cohort's judge items."""
    rows = coverage_of((r.rubric, r.component, r.not_evaluable, r.reason or None, bool(r.get("shortened_input")))
                       for r in data.judgements)
    jury = [r for r in data.judgements if r.jury_judges is not None]  # a jury's: its votes left out
    for row in (row for row in rows if any(r.rubric == row["rubric"] for r in jury)):
        row["jury_votes_left_out"] = sum(r.jury_not_evaluable or 0 for r in jury
                                         if (r.rubric, r.component) == (row["rubric"], row["component"]))
    return rows
