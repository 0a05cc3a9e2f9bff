"""The consilium's stop reasons (ai-consilium.txt Fig. 4), over completed arms: a failed arm has no
stop reason, so it is counted apart and named in the figure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from consilium.reports.compare import STOPS, CohortData
from consilium.reports.figures.style import completed_arms, format_label, formats_of, new_figure, save_figure

__all__ = ["StopCounts", "draw_fig4", "stop_counts"]


@dataclass(frozen=True)
class StopCounts:
    """Fig. 4: one format's completed arms by stop reason (``failed`` arms have none)."""

    format: str
    counts: dict[str, int]
    arms: int
    failed: int

    def pct(self, stop: str) -> float:
        return 100 * self.counts[stop] / self.arms if self.arms else 0.0


def stop_counts(data: CohortData) -> list[StopCounts]:
    """Per format: every stop reason of :data:`STOPS` (zero where none), then any other recorded."""
    rows = []
    for fmt in formats_of(a.format for a in data.arms):
        done = [a for a in completed_arms(data) if a.format == fmt]
        seen = Counter(a.stop_reason for a in done)
        counts = {s: seen[s] for s in [*STOPS, *sorted(set(seen) - set(STOPS))]}
        failed = sum(1 for a in data.arms if a.format == fmt and not a.completed)
        rows.append(StopCounts(fmt, counts, len(done), failed))
    return rows


_STOP_COLOURS = {"consensus": "#4daf4a", "no_change": "#377eb8", "round_limit": "#e41a1c"}
_STOP_NAMES = {"consensus": "consensus", "no_change": "no substantive change", "round_limit": "round limit"}


def draw_fig4(rows: list[StopCounts], out: Path) -> Path:
    """One 100 % stacked bar per format; each segment labelled with its count and %; a narrow segment's
    label repeated in a column at right, in its colour."""
    figure, (axis, side) = new_figure(7.6, 1.5 + 0.6 * len(rows), columns=2, sharey=True,
                                      gridspec_kw={"width_ratios": [5, 1]})
    stops = list(dict.fromkeys(s for r in rows for s in r.counts))
    for y, row in enumerate(rows):
        left = 0.0
        narrow = []
        for stop in stops:
            pct = row.pct(stop)
            axis.barh(y, pct, left=left, color=_STOP_COLOURS.get(stop, "#999999"), edgecolor="white",
                      label=_STOP_NAMES.get(stop, stop) if y == 0 else None)
            text = f"{row.counts[stop]} ({pct:.1f}%)"
            if pct >= 15:
                axis.text(left + pct / 2, y, text, ha="center", va="center", fontsize=7.5, color="white")
            else:
                narrow.append((stop, text))
            left += pct
        for i, (stop, text) in enumerate(narrow):
            side.text(0.0, y - 0.2 * (len(narrow) - 1) + 0.4 * i, f"■ {text}", va="center", fontsize=7.5,
                      color=_STOP_COLOURS.get(stop, "#999999"))
    side.set_xlim(0, 1)
    side.axis("off")
    axis.set_yticks(range(len(rows)), [f"{format_label(r.format)}\n(n = {r.arms}" + (f"; {r.failed} failed)"
                                                                                     if r.failed else ")")
                                       for r in rows])
    axis.set_ylim(len(rows) - 0.5, -0.5)
    axis.set_xlim(0, 100)
    axis.set_xlabel("completed arms (%)")
    figure.suptitle("Controller-recorded stop reasons by format (ai-consilium.txt Fig. 4)", fontsize=9.5,
                    fontweight="bold")
    figure.legend(loc="outside lower center", ncols=len(stops))
    return save_figure(figure, out, "fig4_stop_reasons")
