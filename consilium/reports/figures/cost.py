"""Cost against judge score (``consilium report``): one point per model and format, at its mean cost per case
in US dollars (x) and its mean C1–C8 conclusion score (y), each with its population SD as an error bar. The
panel's cost is the filled marker; the hollow one beside it, joined by a line, adds what judging its arms cost
(every rubric and judge), where that is known.

The numbers are :func:`consilium.reports.consilium.cost.cost_points`; a model × format whose cost is unknown
(a model without prices) or that was not judged has no point, and the figure is not drawn without one.
"""

from __future__ import annotations

from pathlib import Path

from consilium.reports.consilium.cost import CostPoint
from consilium.reports.figures.style import (
    FORMAT_COLOURS,
    FORMAT_MARKERS,
    format_label,
    formats_of,
    new_figure,
    paper_style,
    remove_figure,
    rubric_scale,
    save_figure,
)

__all__ = ["COST_FIGURE", "draw_cost", "write_cost_figure"]

COST_FIGURE = "cost_vs_score"


def draw_cost(points: list[CostPoint], out: Path, unknown: list[str] | None = None) -> Path:
    """The points; ``unknown`` names the model × formats left out because their cost is unknown."""
    from matplotlib.ticker import StrMethodFormatter

    figure, axis = new_figure(6.0, 4.2)
    for fmt in formats_of(p.format for p in points):
        mine = [p for p in points if p.format == fmt]
        axis.errorbar([p.cost for p in mine], [p.score for p in mine], xerr=[p.cost_sd for p in mine],
                      yerr=[p.score_sd for p in mine], fmt=FORMAT_MARKERS.get(fmt, "D"), capsize=3,
                      color=FORMAT_COLOURS.get(fmt, "#2ca02c"), markersize=6, elinewidth=0.8,
                      label=format_label(fmt))
        judged = [p for p in mine if p.judge_cost is not None]
        for p in judged:
            axis.plot([p.cost, p.cost + (p.judge_cost or 0.0)], [p.score, p.score], linestyle=":", linewidth=0.8,
                      color=FORMAT_COLOURS.get(fmt, "#2ca02c"))
        if judged:
            axis.plot([p.cost + (p.judge_cost or 0.0) for p in judged], [p.score for p in judged],
                      FORMAT_MARKERS.get(fmt, "D"), markerfacecolor="none", markersize=6,
                      color=FORMAT_COLOURS.get(fmt, "#2ca02c"), label=f"{format_label(fmt)}, panel + judges")
        for p in mine:
            axis.annotate(f"{p.model} (n = {p.cases}){', estimated' if p.estimated else ''}", (p.cost, p.score),
                          textcoords="offset points",
                          xytext=(6, 5), fontsize=7)
    low, high = rubric_scale()
    axis.set_ylim(low - 0.1, high + 0.1)
    axis.set_xlim(left=0, right=max(max(p.cost + p.cost_sd, p.cost + (p.judge_cost or 0.0)) for p in points) * 1.35
                  or 1.0)
    axis.xaxis.set_major_formatter(StrMethodFormatter("${x:,.4g}"))
    axis.set_xlabel("mean cost per case (USD, at the prices recorded in the traces)")
    axis.set_ylabel(f"mean judge score, C1–C8 of the conclusion ({low}–{high})")
    axis.grid(alpha=0.3)
    axis.legend(loc="lower right")
    figure.suptitle("Cost against judge score by model and format", fontsize=9.5, fontweight="bold")
    note = "error bars: population SD over the completed arms (cost) and the scores (score); n = completed arms"
    if any(p.estimated for p in points):
        note += "\nestimated: tokens counted with tiktoken (the server reported none), so are the dollars"
    if unknown:
        note += "\nno point, cost unknown (no prices): " + "; ".join(unknown)
    unjudged = [f"{p.model}, {p.format}" for p in points if p.judge_cost is None]
    if unjudged:
        note += "\njudging cost unknown (a judge without prices, or only judgements.csv left): " + "; ".join(unjudged)
    figure.supxlabel(note, fontsize=7)
    return save_figure(figure, out, COST_FIGURE)


def write_cost_figure(points: list[CostPoint], out: Path, unknown: list[str] | None = None) -> list[Path]:
    """The figure's PNG (and PDF beside it) when there is a point; else none, and an earlier one removed."""
    if not points:
        remove_figure(out, COST_FIGURE)
        return []
    with paper_style():
        return [draw_cost(points, out, unknown)]
