"""Free-form vs structured, as ai-consilium.txt reports it (Tables 3, 4, 6–9; Fig. 3a, 4, 5, 6).

Reads a cohort folder (``arms.csv``, the traces it lists, ``judgements.csv`` when judged) one trace
at a time, and writes Markdown, CSV and PNG files beside it.
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
from consilium.traces.io import read_trace
from consilium.traces.schema import Trace

__all__ = [
    "CohortData",
    "load_cohort_data",
    "paired_differences",
    "scores_table",
    "table3",
    "table4",
    "table7",
    "table9",
]

STOPS = ("consensus", "no_change", "round_limit")


@dataclass
class CohortData:
    arms: list[dict[str, str]]
    # (model, format, case, round, role, vote) for every vote of every completed arm
    votes: list[tuple[str, str, str, int, str, str]] = field(default_factory=list)
    tokens: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)  # (model, format) -> stage tokens
    judgements: list[dict[str, str]] = field(default_factory=list)


def load_cohort_data(run_dir: Path) -> CohortData:
    arms_csv = run_dir / "arms.csv"
    if not arms_csv.is_file():
        raise UserError(f"{run_dir}: no arms.csv (run `consilium cohort` first)")
    arms = list(csv.DictReader(arms_csv.read_text(encoding="utf-8").splitlines()))
    data = CohortData(arms=arms)
    for arm in arms:
        if not arm.get("trace") or arm.get("status") != "completed":
            continue
        trace = read_trace(arm["trace"])
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
    judged = run_dir / "judgements.csv"
    if judged.is_file():
        data.judgements = list(csv.DictReader(judged.read_text(encoding="utf-8").splitlines()))
    return data


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
