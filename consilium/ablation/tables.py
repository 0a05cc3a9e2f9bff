"""The ablation's tables: one row per ablated arm, the per-case pairs, the statistics, the stop reasons, the
calls reused, and for leave-one-out each role category's contribution.

A comparison is (group, model, format, metric): the group a condition enters (consilium/ablation/kinds.py),
the arm's model and format, and a metric: ``score:<rubric>`` (consilium/ablation/judging.py), ``rounds`` or
``tokens``. Only completed ablated arms of completed originals are paired; a pair without a score on either
side is left out of that score's comparison (and counted in ``pairs_left_out``), and so is a failed ablated arm,
from every metric of its comparisons. Holm's family is every group of one (model, format, metric) and one
family (consilium/ablation/kinds.py): each left-out category, each round cap; ``primary`` apart, since its arms
are also its categories'.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consilium.ablation.judging import Scores
from consilium.ablation.kinds import holm_family
from consilium.ablation.run import AblatedArm
from consilium.ablation.stats import paired
from consilium.cohort.arms import relative
from consilium.stats import holm

__all__ = ["METRICS", "arm_rows", "call_rows", "contribution_rows", "pair_rows", "stat_rows", "stop_rows"]

#: The metrics besides the scores, in table order.
METRICS = ("rounds", "tokens")
DIGITS = 4

_Comparison = tuple[str, str, str, str]  # group, model, format, metric


def _n(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


def arm_rows(arms: Sequence[AblatedArm], run_dir: Path, out: Path, originals: Scores,
             scores: Scores) -> list[dict[str, Any]]:
    rows = []
    for arm in arms:
        o, left = arm.original, arm.condition.left_out
        original_path = o.path(run_dir)
        row: dict[str, Any] = {
            "condition": arm.condition.name, "groups": " ".join(arm.condition.groups), "case_id": o.case_id,
            "model": o.model, "format": o.format, "replicate": o.replicate,
            "left_out": left.id if left else "", "left_out_category": left.category if left else "",
            "moderator": arm.condition.moderator or "", "status": arm.after.status,
            "stop_reason_original": arm.before.stop_reason, "stop_reason": arm.after.stop_reason,
            "rounds_original": arm.before.rounds, "rounds": arm.after.rounds,
            "tokens_original": arm.before.tokens, "tokens": arm.after.tokens,
            "reused_calls": arm.reused, "new_calls": arm.new}
        for rubric in scores:
            row[f"score_original:{rubric}"] = _n(originals[rubric].get(original_path))
            row[f"score:{rubric}"] = _n(scores[rubric].get(arm.path))
        rows.append({**row, "original_trace": o.trace, "trace": relative(arm.path, out)})
    return rows


def _values(arm: AblatedArm, metric: str, run_dir: Path, originals: Scores,
            scores: Scores) -> tuple[float | None, float | None]:
    if metric == "rounds":
        return arm.before.rounds, arm.after.rounds
    if metric == "tokens":
        return arm.before.tokens, arm.after.tokens
    rubric = metric.removeprefix("score:")
    return originals[rubric].get(arm.original.path(run_dir)), scores[rubric].get(arm.path)


def pair_rows(arms: Sequence[AblatedArm], run_dir: Path, originals: Scores,
              scores: Scores) -> tuple[list[dict[str, Any]], dict[_Comparison, int]]:
    """One row per comparison and case (its ablated arms averaged), and the pairs each comparison left out."""
    metrics = (*(f"score:{r}" for r in scores), *METRICS)
    found: dict[_Comparison, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    left_out: dict[_Comparison, int] = defaultdict(int)
    for arm in arms:
        failed = arm.after.status != "completed"
        for group in arm.condition.groups:
            for metric in metrics:
                key = (group, arm.original.model, arm.original.format, metric)
                before, after = (None, None) if failed else _values(arm, metric, run_dir, originals, scores)
                if before is None or after is None:
                    left_out[key] += 1
                else:
                    found[key][arm.original.case_id].append((float(before), float(after)))
    rows = []
    for (group, model, fmt, metric), cases in found.items():
        for case, values in sorted(cases.items()):
            before = statistics.fmean(b for b, _ in values)
            after = statistics.fmean(a for _, a in values)
            rows.append({"group": group, "model": model, "format": fmt, "metric": metric, "case_id": case,
                         "arms": len(values), "original": _n(before), "ablated": _n(after),
                         "difference": _n(after - before)})
    return rows, dict(left_out)


def stat_rows(pairs: Sequence[dict[str, Any]], left_out: dict[_Comparison, int], *, draws: int,
              seed: int) -> list[dict[str, Any]]:
    by: dict[_Comparison, list[dict[str, Any]]] = defaultdict(list)
    for pair in pairs:
        by[(pair["group"], pair["model"], pair["format"], pair["metric"])].append(pair)
    rows = []
    for key in sorted(set(by) | set(left_out), key=lambda k: (not k[3].startswith("score:"), k[3], k[1], k[2], k[0])):
        group, model, fmt, metric = key
        cases = by.get(key, [])
        row: dict[str, Any] = {"group": group, "model": model, "format": fmt, "metric": metric,
                               "cases": len(cases), "pairs_left_out": left_out.get(key, 0)}
        if cases:
            result = paired({r["case_id"]: r["original"] for r in cases}, {r["case_id"]: r["ablated"] for r in cases},
                            draws=draws, seed=seed, key="|".join(key))
            row.update(mean_original=_n(result.mean_original), mean_ablated=_n(result.mean_ablated),
                       mean_difference=_n(result.mean_difference), ci_low=_n(result.ci_low),
                       ci_high=_n(result.ci_high), rank_biserial=_n(result.rank_biserial),
                       wilcoxon_w=_n(result.statistic), p=result.p, note=result.note)
        else:
            row.update(note="no pair")
        rows.append(row)
    families: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        families[(row["model"], row["format"], row["metric"], holm_family(row["group"]))].append(row)
    for members in families.values():
        for member, adjusted in zip(members, holm([r.get("p") for r in members]), strict=True):
            member["p_holm"] = adjusted  # p and p_holm as computed: a tiny p is never rounded to 0
    return rows


def _counted_under(arm: AblatedArm) -> str:
    """The one group a table of arms counts an arm under: its condition's first (for leave-one-out the left-out
    role's category). The comparisons take every group, but an arm is one arm: the primary role's is in its
    category's row, not again under ``primary``."""
    return arm.condition.groups[0]


def stop_rows(arms: Sequence[AblatedArm]) -> list[dict[str, Any]]:
    """How the stop reasons moved: per condition group, model and format, original → ablated, arms; each ablated
    arm counted once (:func:`_counted_under`), so the counts add up to the ablated arms."""
    counts: dict[tuple[str, str, str, str, str], int] = defaultdict(int)
    for arm in arms:
        ablated = arm.after.stop_reason or ("failed" if arm.after.status != "completed" else "none")
        counts[(_counted_under(arm), arm.original.model, arm.original.format, arm.before.stop_reason or "none",
                ablated)] += 1
    return [{"group": g, "model": m, "format": f, "original": o, "ablated": a, "arms": n}
            for (g, m, f, o, a), n in sorted(counts.items())]


def call_rows(arms: Sequence[AblatedArm]) -> list[dict[str, Any]]:
    """Calls reused from the originals and asked anew, per condition group, model and format; each ablated arm
    counted once (:func:`_counted_under`)."""
    totals: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for arm in arms:
        total = totals[(_counted_under(arm), arm.original.model, arm.original.format)]
        total[0] += 1
        total[1] += arm.reused
        total[2] += arm.new
    return [{"group": g, "model": m, "format": f, "arms": n, "reused_calls": r, "new_calls": w,
             "reused_share": _n(r / (r + w)) if r + w else None}
            for (g, m, f), (n, r, w) in sorted(totals.items())]


def contribution_rows(stats: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leave-one-out: each role category's contribution to a score, the mean drop when it is left out
    (original − ablated), largest first; the ``primary`` group is the primary role whatever its category."""
    rows = [{"category": r["group"], "model": r["model"], "format": r["format"], "metric": r["metric"],
             "cases": r["cases"], "mean_drop": 0.0 - r["mean_difference"] + 0.0,
             "ci_low": 0.0 - r["ci_high"] + 0.0, "ci_high": 0.0 - r["ci_low"] + 0.0, "p_holm": r.get("p_holm")}
            for r in stats if r["metric"].startswith("score:") and r.get("mean_difference") is not None]
    return sorted(rows, key=lambda r: (r["metric"], r["model"], r["format"], -r["mean_drop"], r["category"]))
