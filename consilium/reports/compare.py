"""Free-form vs structured, as ai-consilium.txt reports it (Tables 3, 4, 6–9; Fig. 3a, 4, 5, 6).

Reads a cohort folder (``arms.csv``, the traces it lists, and the judgement records beside them, or
``judgements.csv`` when no record is left) one trace at a time, and writes Markdown, CSV and PNG
files beside it.
"""

from __future__ import annotations

import csv
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from consilium.errors import UserError
from consilium.judges.coverage import coverage_of
from consilium.judges.record import read_judgement
from consilium.traces.io import read_trace
from consilium.traces.schema import Trace

__all__ = [
    "CohortData",
    "judgement_coverage",
    "load_cohort_data",
    "paired_differences",
    "protocol_of",
    "read_arms",
    "scores_table",
    "table3",
    "table4",
    "table7",
    "table9",
    "trace_location",
]

STOPS = ("consensus", "no_change", "round_limit")


@dataclass
class CohortData:
    arms: list[dict[str, str]]
    # (model, format, case, round, role, vote) for every vote of every completed arm
    votes: list[tuple[str, str, str, int, str, str]] = field(default_factory=list)
    tokens: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)  # (model, format) -> stage tokens
    # one row per judge item: case_id, model, format, rubric, component, criterion, score ("" when
    # not evaluable), not_evaluable, reason, judgement (the record's file)
    judgements: list[dict[str, str]] = field(default_factory=list)
    judgements_from: str = "none"  # "records", "judgements.csv" or "none"
    unmatched_records: list[Path] = field(default_factory=list)  # records of traces not completed arms


_ARM_COLUMNS = ("case_id", "format", "status")
# Columns a completed arm needs, and which of them are numbers (None: any text).
_COMPLETED: dict[str, dict[str, type | None]] = {
    "consilium": {"model": None, "trace": None, "stop_reason": None, "rounds": int, "r1_dissent": float},
    "board": {"trace": None, "stop_reason": None, "turns": float, "input_tokens": int, "output_tokens": int,
              "format_exact": float, "format_dense": float},
}
_OPTIONAL = {"r1_dissent", "format_exact", "format_dense"}  # may be empty or absent
_JUDGEMENT_COLUMNS = ("case_id", "model", "format", "rubric", "component", "criterion", "score", "not_evaluable")


def protocol_of(arms: list[dict[str, str]]) -> str:
    return "board" if any((a.get("format") or "").startswith("board-") for a in arms) else "consilium"


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
    """The rows of ``RUN_DIR/arms.csv``; with ``check``, a completed arm must have every column the
    tables read, with numbers where numbers belong."""
    arms_csv = run_dir / "arms.csv"
    if not arms_csv.is_file():
        raise UserError(f"{run_dir}: no arms.csv (run `consilium cohort` first)")
    arms = _read_csv(arms_csv, _ARM_COLUMNS)
    if not arms:
        raise UserError(f"{arms_csv}: no arms")
    needed = _COMPLETED[protocol_of(arms)] if check else {}
    for line, arm in enumerate(arms, 2):
        if arm.get("status") != "completed":
            continue
        for column, kind in needed.items():
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
                       data: CohortData) -> list[dict[str, str]]:
    """Rows from the ``*.judge.<rubric>.json`` records beside the traces of completed arms."""
    rows: list[dict[str, str]] = []
    for file in sorted(run_dir.rglob("*.judge.*.json")):
        if file.name.endswith(".trace.json") or not file.is_file():
            continue
        judgement = read_judgement(file)
        arm = by_trace.get((file.parent / judgement.trace).resolve())
        if arm is None:
            data.unmatched_records.append(file)
            continue
        model = arm.get("model") or arm.get("model_spec", "")
        for item in judgement.items:
            rows.append({"case_id": arm["case_id"], "model": model, "format": arm["format"],
                         "rubric": judgement.rubric, "component": item.component, "criterion": item.criterion,
                         "score": "" if item.score is None else str(item.score),
                         "not_evaluable": str(item.not_evaluable), "reason": item.reason or "",
                         "judgement": str(file.relative_to(run_dir))})
    return rows


def load_cohort_data(run_dir: Path) -> CohortData:
    arms = read_arms(run_dir)
    data = CohortData(arms=arms)
    by_trace: dict[Path, dict[str, str]] = {}
    for arm in arms:
        if not arm.get("trace") or arm.get("status") != "completed":
            continue
        location = trace_location(run_dir, arm["trace"])
        by_trace[location.resolve()] = arm
        trace = read_trace(location)
        if not isinstance(trace, Trace):
            continue
        for rnd in trace.rounds:
            for vote in rnd.votes:
                data.votes.append((arm["model"], arm["format"], arm["case_id"], rnd.round, vote.role, vote.vote))
        counter = data.tokens.setdefault((arm["model"], arm["format"]), Counter())
        for stage, usage in trace.usage.by_stage.items():
            counter[f"{stage}:input"] += usage.input_tokens
            counter[f"{stage}:output"] += usage.output_tokens
        counter["cases"] += 1
    # The records are the source of truth: judgements made after the cohort count, and a stale
    # judgements.csv adds nothing. The CSV is read only when no record is left.
    records = _judgement_records(run_dir, by_trace, data)
    judged = run_dir / "judgements.csv"
    if records or data.unmatched_records:
        data.judgements, data.judgements_from = records, "records"
    elif judged.is_file():
        data.judgements, data.judgements_from = _read_csv(judged, _JUDGEMENT_COLUMNS), "judgements.csv"
        for line, row in enumerate(data.judgements, 2):
            if row["score"]:
                try:
                    float(row["score"])
                except ValueError:
                    raise UserError(f"{judged}: line {line}: score: {row['score']!r} is not a number") from None
    return data


def judgement_coverage(data: CohortData) -> list[dict[str, Any]]:
    """:func:`consilium.judges.coverage.coverage_of` over the cohort's judge items."""
    return coverage_of((r["rubric"], r["component"], r["not_evaluable"].strip().lower() == "true",
                        r.get("reason") or None) for r in data.judgements)


def _pct(n: int, total: int) -> str:
    return f"{n} ({100 * n / total:.1f}%)" if total else "0"


def table3(data: CohortData) -> list[dict[str, Any]]:
    """Controller-recorded consilium outcomes per model and format (Table 3)."""
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for arm in data.arms:
        if arm.get("status") == "completed":
            groups[(arm["model"], arm["format"])].append(arm)
    rows = []
    for (model, fmt), arms in sorted(groups.items()):
        n = len(arms)
        dissent = [float(a["r1_dissent"]) for a in arms if a.get("r1_dissent")]
        stops = Counter(a["stop_reason"] for a in arms)
        rows.append({"model": model, "format": fmt, "arms": n,
                     "r1_dissent_mean_pct": round(100 * statistics.fmean(dissent), 1) if dissent else None,
                     "r1_unanimous": _pct(sum(d == 0 for d in dissent), n),
                     "mean_rounds": round(statistics.fmean(int(a["rounds"]) for a in arms), 2),
                     **{stop: _pct(stops[stop], n) for stop in STOPS}})
    return rows


def table4(data: CohortData) -> list[dict[str, Any]]:
    """Role-level vote transitions between consecutive rounds, among consilia continuing (Table 4)."""
    by_arm: dict[tuple[str, str, str], dict[int, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for model, fmt, case, rnd, role, vote in data.votes:
        by_arm[(model, fmt, case)][rnd][role] = vote
    counts: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)
    for (_, fmt, _), rounds in by_arm.items():
        for rnd in sorted(rounds):
            if rnd + 1 not in rounds:
                continue
            for role, vote in rounds[rnd].items():
                after = rounds[rnd + 1].get(role)
                if after:
                    before_word = "no" if vote == "dissent" else "yes"
                    counts[(fmt, rnd)][f"{before_word}->{'no' if after == 'dissent' else 'yes'}"] += 1
    rows = []
    for (fmt, rnd), c in sorted(counts.items()):
        no, yes = c["no->yes"] + c["no->no"], c["yes->no"] + c["yes->yes"]
        rows.append({"format": fmt, "transition": f"R{rnd}->R{rnd + 1}",
                     **{k: f"{c[k]} ({100 * c[k] / (no if k.startswith('no') else yes):.1f}%)"
                        if (no if k.startswith("no") else yes) else "0"
                        for k in ("no->yes", "no->no", "yes->no", "yes->yes")}})
    return rows


def _judge_means(data: CohortData, component: str = "conclusion") -> dict[tuple[str, str, str], float]:
    """Per (model, format, case): mean of criteria 1–8 of the ai-consilium judge for a component."""
    scores: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in data.judgements:
        if row["rubric"] == "ai-consilium" and row["component"] == component and row["score"] and \
                row["criterion"].startswith("c"):
            scores[(row["model"], row["format"], row["case_id"])].append(float(row["score"]))
    return {k: statistics.fmean(v) for k, v in scores.items()}


def table7(data: CohortData) -> list[dict[str, Any]]:
    """Tokens per case by model and format, with the mean judge score (Table 7)."""
    means = _judge_means(data)
    rows = []
    for (model, fmt), counter in sorted(data.tokens.items()):
        cases = counter["cases"] or 1
        inp = sum(v for k, v in counter.items() if k.endswith(":input")) / cases
        out = sum(v for k, v in counter.items() if k.endswith(":output")) / cases
        judged = [v for (m, f, _), v in means.items() if m == model and f == fmt]
        rows.append({"model": model, "format": fmt, "cases": counter["cases"],
                     "mean_judge_score": round(statistics.fmean(judged), 3) if judged else None,
                     "input_tokens_per_case": round(inp, 1), "output_tokens_per_case": round(out, 1),
                     "total_tokens_per_case": round(inp + out, 1)})
    return rows


def scores_table(data: CohortData) -> list[dict[str, Any]]:
    """Judge scores by format, component and criterion, mean ± SD (Tables 6 and 8)."""
    groups: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for row in data.judgements:
        if row["score"]:
            groups[(row["rubric"], row["format"], row["component"], row["criterion"])].append(float(row["score"]))
    return [{"rubric": r, "format": f, "component": c, "criterion": k, "n": len(v),
             "mean": round(statistics.fmean(v), 3), "sd": round(statistics.pstdev(v), 3) if len(v) > 1 else 0.0}
            for (r, f, c, k), v in sorted(groups.items())]


def table9(data: CohortData) -> list[dict[str, Any]]:
    """Mean ai-consilium score (criteria 1–8, conclusion) by completed review rounds (Table 9)."""
    means = _judge_means(data)
    groups: dict[str, list[float]] = defaultdict(list)
    for arm in data.arms:
        key = (arm.get("model", ""), arm.get("format", ""), arm["case_id"])
        if arm.get("status") == "completed" and key in means:
            rounds = int(arm["rounds"])
            groups["1" if rounds == 1 else "2" if rounds == 2 else ">=3"].append(means[key])
    return [{"rounds": k, "outputs": len(v), "mean_score": round(statistics.fmean(v), 3),
             "sd": round(statistics.pstdev(v), 3) if len(v) > 1 else 0.0}
            for k, v in sorted(groups.items())]


def paired_differences(data: CohortData, *, bootstrap: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """Free-form − structured per criterion on the same cases, with case-clustered bootstrap 95 % CIs."""
    by_key: dict[tuple[str, str, str], dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for row in data.judgements:
        if row["score"]:
            by_key[(row["rubric"], row["component"], row["criterion"])][row["case_id"]][row["format"]] = \
                float(row["score"])
    rng = np.random.default_rng(seed)
    rows = []
    for (rubric, component, criterion), cases in sorted(by_key.items()):
        diffs = np.array([v["free-form"] - v["structured"] for v in cases.values()
                          if "free-form" in v and "structured" in v])
        if len(diffs) == 0:
            continue
        draws = rng.integers(0, len(diffs), size=(bootstrap, len(diffs)))
        means = diffs[draws].mean(axis=1)
        rows.append({"rubric": rubric, "component": component, "criterion": criterion, "cases": len(diffs),
                     "mean_difference": round(float(diffs.mean()), 4),
                     "ci_low": round(float(np.percentile(means, 2.5)), 4),
                     "ci_high": round(float(np.percentile(means, 97.5)), 4)})
    return rows
