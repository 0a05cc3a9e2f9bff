"""What a cohort spent, the panel's and the judges' side by side: arms.csv's judge columns and the closing lines.

An arm's judge columns sum every judge call its judgements made (each rubric, each judge of a jury, the calls
of not-evaluable items included; consilium/judges/cost.py); ``total_cost_usd`` adds them to the panel's
``cost_usd``. An arm no judge scored (a failed arm, a cohort without ``--judge``) has no judge call and costs $0
to judge. Dollars are unknown (an empty cell, "—" on the terminal) whenever a call that counts has no prices,
never $0.

The judge columns are always worked out from the judgement records beside each arm's trace as they are then
(:func:`recorded_costs`): at the cohort's end, and again whenever ``consilium judge`` (or the API's
``judge_run``) judges the folder, which rewrites them atomically, so that a later judging never leaves arms.csv
counting judgements its files no longer hold. A failed arm's trace that such a judging scored counts too: its
judge calls were made.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from consilium.cohort.tables import write_csv
from consilium.judges.cost import JudgeCost, judge_costs, sum_costs
from consilium.judges.record import read_judgement
from consilium.models import Usage
from consilium.models.pricing import format_usd
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import judgements_of

__all__ = ["JUDGE_COLUMNS", "judge_cells", "recorded_costs", "rewrite_judge_columns", "spend_lines",
           "write_judge_columns"]

#: The columns judging adds to arms.csv, after the panel's.
JUDGE_COLUMNS = ("judge_calls", "judge_failed_calls", "judge_input_tokens", "judge_output_tokens", "judge_cost_usd",
                 "total_cost_usd")


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, 8)


def _panel_cost(row: dict[str, Any]) -> float | None:
    """A row's panel dollars; None when unknown (an empty cell, or an arm that failed before its trace)."""
    value = row.get("cost_usd")
    return None if value in (None, "") else float(value)


def judge_cells(row: dict[str, Any], costs: Sequence[JudgeCost]) -> dict[str, Any]:
    """An arm's judge columns from the judge costs of its judgements (none: not judged)."""
    usage = Usage.total(c.usage for c in costs)
    judge = sum_costs(c.cost for c in costs)
    panel = _panel_cost(row)
    return {"judge_calls": usage.calls, "judge_failed_calls": sum(c.failed_calls for c in costs),
            "judge_input_tokens": usage.input_tokens, "judge_output_tokens": usage.output_tokens,
            "judge_cost_usd": _usd(judge), "total_cost_usd": _usd(None if panel is None or judge is None
                                                                   else panel + judge)}


def recorded_costs(run_dir: Path, rows: Iterable[dict[str, Any]]) -> dict[str, list[JudgeCost]]:
    """Each arm's judge costs, by its trace as arms.csv names it: those of every judgement record beside the
    trace (each rubric's), as the files are now; an arm without a trace has none."""
    costs: dict[str, list[JudgeCost]] = {}
    for row in rows:
        name = str(row.get("trace") or "")
        if not name:
            continue
        trace = run_dir / name
        costs[name] = [cost for record in judgements_of(trace) for cost in judge_costs(read_judgement(record))]
    return costs


def write_judge_columns(arms_csv: Path, rows: list[dict[str, Any]], costs: dict[str, list[JudgeCost]]) -> Path:
    """arms.csv rewritten atomically with each arm's judge columns after its panel's (the rows given, updated in
    place); the other columns as they are, in the file's order."""
    with arms_csv.open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle), [])
    for row in rows:
        row.update(judge_cells(row, costs.get(str(row.get("trace") or ""), [])))
    columns = [c for c in header if c not in JUDGE_COLUMNS] + list(JUDGE_COLUMNS)
    columns += [k for row in rows for k in row if k not in columns]
    return write_csv(arms_csv, [{c: row.get(c) for c in dict.fromkeys(columns)} for row in rows],
                     fields=tuple(columns))


def rewrite_judge_columns(run_dir: Path) -> Path | None:
    """A cohort folder's arms.csv with its judge columns worked out again from the judgement records now beside
    its arms' traces (after a judging of the folder); None without arms.csv."""
    folder = RunFolder(run_dir)
    if not folder.is_cohort:
        return None
    rows = [row.cells() for row in folder.arms(named=False)]  # typed: written back as the same text
    return write_judge_columns(folder.arms_csv, rows, recorded_costs(run_dir, rows))


def _tokens(usage: Usage) -> str:
    return f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens, {usage.calls:,} calls"


def spend_lines(rows: Iterable[dict[str, Any]], costs: Sequence[JudgeCost]) -> list[str]:
    """The closing lines: the panel's tokens and dollars over every arm (failed ones included: their calls
    cost), each rubric's judge's (a jury's judges apart), the judges' together and the sum."""
    rows = list(rows)
    panel = Usage(input_tokens=sum(int(r.get("input_tokens") or 0) for r in rows),
                  output_tokens=sum(int(r.get("output_tokens") or 0) for r in rows),
                  calls=sum(int(r.get("calls") or 0) for r in rows))
    panel_cost = sum_costs(_panel_cost(r) for r in rows)
    lines = [f"cost: panel {_tokens(panel)}, {format_usd(panel_cost)}"]
    judges = sum_costs(c.cost for c in costs)
    if costs:
        for rubric, model in dict.fromkeys((c.rubric, c.judge_model) for c in costs):
            mine = [c for c in costs if (c.rubric, c.judge_model) == (rubric, model)]
            failed = sum(c.failed_calls for c in mine)
            dollars = format_usd(sum_costs(c.cost for c in mine))
            lines.append(f"  judge {model} ({rubric}): {_tokens(Usage.total(c.usage for c in mine))}"
                         + (f", {failed} failed" if failed else "") + f", {dollars}")
        usage = Usage.total(c.usage for c in costs)
        lines.append(f"  judges: {_tokens(usage)}, {format_usd(judges)}")
    total = None if panel_cost is None or judges is None else panel_cost + judges
    lines.append(f"  total: {_tokens(panel + Usage.total(c.usage for c in costs))}, {format_usd(total)}")
    return lines
