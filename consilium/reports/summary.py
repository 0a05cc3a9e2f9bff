"""Summary tables of a cohort: consilium outcomes, or board results (conclusion alignment,
four-decision scores, format validity, turns, tokens)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from consilium.judges.rubric import load_rubric
from consilium.judges.scoring import weighted_decisions
from consilium.reports.compare import CohortData

__all__ = ["board_figure", "board_table", "is_board"]


def is_board(data: CohortData) -> bool:
    return any(a.get("format", "").startswith("board-") for a in data.arms)


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def board_table(data: CohortData) -> list[dict[str, Any]]:
    weights = {c.id: c.weight for c in load_rubric("otb-four-decision").criteria}
    alignment: dict[tuple[str, str], list[float]] = defaultdict(list)
    decisions: dict[tuple[str, str, str], dict[str, int]] = defaultdict(dict)
    for row in data.judgements:
        if not row["score"]:
            continue
        if row["rubric"] == "otb-conclusion-alignment":
            alignment[(row["model"], row["format"])].append(float(row["score"]))
        elif row["rubric"] == "otb-four-decision":
            decisions[(row["model"], row["format"], row["case_id"])][row["criterion"]] = int(float(row["score"]))
    decision_means: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (model, variant, _), scores in decisions.items():
        value = weighted_decisions(scores, weights) if len(scores) == len(weights) else None
        if value is not None:
            decision_means[(model, variant)].append(value)
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for arm in data.arms:
        groups[(arm.get("model") or arm.get("model_spec", ""), arm["format"])].append(arm)
    rows = []
    for (model, variant), arms in sorted(groups.items()):
        done = [a for a in arms if a["status"] == "completed"]
        exact = [float(a["format_exact"]) for a in done if a.get("format_exact") not in (None, "")]
        dense = [float(a["format_dense"]) for a in done if a.get("format_dense") not in (None, "")]
        stops = Counter(a["stop_reason"] for a in done)
        tokens = [int(a["input_tokens"]) + int(a["output_tokens"]) for a in done]
        rows.append({"model": model, "mode": variant.removeprefix("board-"), "arms": len(arms), "completed": len(done),
                     "format_exact_rate": _mean(exact), "format_dense_mean": _mean(dense),
                     "turns_mean": _mean([float(a["turns"]) for a in done]),
                     "stops": ", ".join(f"{k} {v}" for k, v in sorted(stops.items())),
                     "tokens_per_case": _mean([float(t) for t in tokens]),
                     "conclusion_alignment_mean": _mean(alignment.get((model, variant), [])),
                     "four_decision_mean": _mean(decision_means.get((model, variant), []))})
    return rows


def board_figure(rows: list[dict[str, Any]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    figure, axis = plt.subplots(figsize=(6, 3.5))
    labels = [f"{r['model']}\n{r['mode']}" for r in rows]
    metrics = [("format_exact_rate", "format valid (share)"), ("format_dense_mean", "format dense (mean)")]
    width = 0.8 / len(metrics)
    for i, (key, label) in enumerate(metrics):
        axis.bar([x + i * width for x in range(len(rows))], [r[key] or 0 for r in rows], width, label=label)
    axis.set_xticks([x + width / 2 for x in range(len(rows))], labels, fontsize=7)
    axis.set_ylim(0, 1.05)
    axis.set_title("Board transcripts: format checks (App. E.2)")
    axis.legend(fontsize=8)
    figure.tight_layout()
    path = out / "board_format.png"
    tmp = path.with_name(f".{path.name}.tmp.png")
    figure.savefig(tmp, dpi=110)
    plt.close(figure)
    tmp.replace(path)
    return path
