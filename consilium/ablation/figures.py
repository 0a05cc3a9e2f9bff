"""The ablation's forest plot: each comparison's mean paired difference (ablated − original) with its 95 %
case-clustered bootstrap interval, one panel per metric, a line at zero (no effect)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consilium.reports.figures.style import new_figure, paper_style, save_figure

__all__ = ["forest_plot"]


def forest_plot(stats: Sequence[dict[str, Any]], out: Path, title: str, stem: str = "forest") -> Path | None:
    """``stem``.png and .pdf in ``out``; None (nothing drawn) when no comparison has a difference."""
    rows = [r for r in stats if r.get("mean_difference") is not None]
    # the scores first, then rounds and tokens; one row per comparison, at the same height in every panel
    metrics = sorted(dict.fromkeys(r["metric"] for r in rows), key=lambda m: (not m.startswith("score:"), m))
    if not metrics:
        return None
    labels = list(dict.fromkeys(_label(r) for r in rows))[::-1]
    with paper_style():
        figure, axes = new_figure(1.6 + 2.4 * len(metrics), 0.9 + 0.24 * len(labels), columns=len(metrics),
                                  squeeze=False, sharey=True)
        for axis, metric in zip(axes[0], metrics, strict=True):
            mine = [r for r in rows if r["metric"] == metric]
            y = [labels.index(_label(r)) for r in mine]
            means = [r["mean_difference"] for r in mine]
            errors = [[m - r["ci_low"] for m, r in zip(means, mine, strict=True)],
                      [r["ci_high"] - m for m, r in zip(means, mine, strict=True)]]
            axis.errorbar(means, y, xerr=errors, fmt="o", color="#1f77b4", ecolor="#555555", capsize=2,
                          markersize=4)
            axis.axvline(0, color="#999999", linewidth=0.8, linestyle="--")
            axis.set_xlabel("ablated − original (95 % CI)")
            axis.set_title(metric)
        axes[0][0].set_yticks(range(len(labels)), labels)
        figure.suptitle(title)
        return save_figure(figure, out, stem)


def _label(row: dict[str, Any]) -> str:
    return f"{row['group']} · {row['format']} · {row['model']}"[:56]
