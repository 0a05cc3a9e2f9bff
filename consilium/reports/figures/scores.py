"""The AI Consilium judge's scores of the multidisciplinary conclusions (ai-consilium.txt Figs. 6–8), on
the rubric's full 0–3 scale, over every model and format.

Only criteria 1–8 are scored per output; the whole-case criteria (panel adequacy, complexity, overall
quality: ``whole_case`` in consilium/judges/rubrics/ai-consilium.yaml) never enter a C1–C8 mean, and
complexity (criterion 10) is Fig. 8C's own panel. Not-evaluable items are left out of every mean and
are a category of their own in Fig. 6.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.reports.compare import CohortData
from consilium.reports.consilium.data import replicate_key
from consilium.reports.figures.style import (
    RUBRIC,
    completed_arms,
    criterion_label,
    integer_axis,
    new_figure,
    per_output_criteria,
    rubric_scale,
    save_figure,
)
from consilium.runfolder.rows import JudgementRow

__all__ = [
    "COMPLEXITY",
    "CaseMeans",
    "CriterionDistribution",
    "RoundsGroup",
    "case_means",
    "criterion_distributions",
    "draw_fig6",
    "draw_fig7",
    "draw_fig8",
    "rounds_groups",
]

COMPONENT = "conclusion"
#: Criterion 10, the judge's rating of the case's complexity (Table 9, Fig. 8C).
COMPLEXITY = "case_complexity"
BIN = 0.5  # Fig. 7's bin width
#: Fig. 8's groups of completed review rounds.
GROUPS = ("1", "2", "≥3")


def _conclusions(data: CohortData) -> list[JudgementRow]:
    return [r for r in data.judgements if r.rubric == RUBRIC and r.component == COMPONENT]


@dataclass(frozen=True)
class CriterionDistribution:
    """Fig. 6: one criterion's conclusion items by score, and those not evaluable; ``items`` in all."""

    criterion: str
    label: str
    counts: dict[int, int]
    not_evaluable: int

    @property
    def items(self) -> int:
        return sum(self.counts.values()) + self.not_evaluable

    def pct(self, score: int | None) -> float:
        """% of the items with ``score`` (None: not evaluable); the categories add up to 100."""
        count = self.not_evaluable if score is None else self.counts[score]
        return 100 * count / self.items if self.items else 0.0


def criterion_distributions(data: CohortData) -> list[CriterionDistribution]:
    """Per C1–C8 criterion (rubric order) with at least one item: every score of the scale, zero where none was."""
    low, high = rubric_scale()
    rows = []
    for criterion in per_output_criteria():
        items = [r for r in _conclusions(data) if r.criterion == criterion.id]
        if items:
            scores = Counter(round(r.score) for r in items if r.score is not None)
            rows.append(CriterionDistribution(criterion.id, criterion_label(criterion),
                                              {s: scores[s] for s in range(low, high + 1)},
                                              sum(1 for r in items if r.score is None)))
    return rows


@dataclass(frozen=True)
class CaseMeans:
    """Fig. 7: per case, the mean of one criterion's numeric conclusion scores over every model and
    format; the cases in each 0.5-point bin (the last bin closed) and their median."""

    criterion: str
    label: str
    means: dict[str, float]
    edges: tuple[float, ...]
    bins: tuple[int, ...]
    median: float


def _edges() -> tuple[float, ...]:
    import numpy as np  # on use: the command line's parser never loads numpy

    low, high = rubric_scale()
    return tuple(float(e) for e in np.arange(low, high + BIN / 2, BIN))


def case_means(data: CohortData) -> list[CaseMeans]:
    """Per C1–C8 criterion with a numeric score; replicates: a case's (model, format) is their scores' mean first."""
    edges = _edges()
    rows = []
    for criterion in per_output_criteria():
        scores: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in _conclusions(data):
            if r.criterion == criterion.id and r.score is not None:
                scores[r.case_id][(r.model, r.format)].append(r.score)
        if scores:
            means = {case: statistics.fmean(statistics.fmean(v) for v in slots.values())
                     for case, slots in sorted(scores.items())}
            import numpy as np  # on use: the command line's parser never loads numpy

            bins, _ = np.histogram(list(means.values()), bins=edges)
            rows.append(CaseMeans(criterion.id, criterion_label(criterion), means, edges,
                                  tuple(int(b) for b in bins), statistics.median(means.values())))
    return rows


@dataclass(frozen=True)
class RoundsGroup:
    """Fig. 8 (Table 9, pooled): the final reports of the arms that completed ``rounds`` review rounds
    (1, 2, ≥3) and have a numeric C1–C8 score; their output means' mean and population SD (A), those
    below 2 (B), and their numeric complexity scores' mean and population SD (C)."""

    rounds: str
    outputs: int
    mean: float
    sd: float
    below_2: int
    complexity_n: int
    complexity_mean: float | None
    complexity_sd: float | None

    @property
    def below_2_pct(self) -> float:
        return 100 * self.below_2 / self.outputs


def rounds_groups(data: CohortData) -> list[RoundsGroup]:
    """As Table 9 pooled: in a cohort run in replicates a replicate is in the group of its own rounds, and
    the replicates of a (model, format, case) in one group are averaged first."""
    criteria = {c.id for c in per_output_criteria()}
    Key = tuple[str, str, str, str]  # model, format, case, replicate
    outputs: dict[Key, list[float]] = defaultdict(list)
    complexity: dict[Key, float] = {}
    for r in _conclusions(data):
        if r.score is not None:
            key = (r.model, r.format, r.case_id, replicate_key(r))
            if r.criterion in criteria:
                outputs[key].append(r.score)
            elif r.criterion == COMPLEXITY:
                complexity[key] = r.score
    groups: dict[str, dict[tuple[str, str, str], list[Key]]] = defaultdict(lambda: defaultdict(list))
    for arm in completed_arms(data):
        key = (arm.model, arm.format, arm.case_id, replicate_key(arm))
        if key in outputs:
            rounds = arm.get("rounds")
            groups["1" if rounds == 1 else "2" if rounds == 2 else "≥3"][key[:3]].append(key)
    rows = []
    for name in GROUPS:
        if slots := list(groups.get(name, {}).values()):
            means = [statistics.fmean(statistics.fmean(outputs[k]) for k in keys) for keys in slots]
            rated = [statistics.fmean(complexity[k] for k in keys if k in complexity) for keys in slots
                     if any(k in complexity for k in keys)]
            rows.append(RoundsGroup(name, len(means), statistics.fmean(means), statistics.pstdev(means),
                                    sum(m < 2 for m in means), len(rated),
                                    statistics.fmean(rated) if rated else None,
                                    statistics.pstdev(rated) if rated else None))
    return rows


def _score_colours(n: int) -> list[tuple[float, float, float, float]]:
    from matplotlib import colormaps

    return [colormaps["RdYlBu"](0.08 + 0.84 * i / max(1, n - 1)) for i in range(n)]


def _dark(colour: Any) -> bool:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b < 0.5


def draw_fig6(rows: list[CriterionDistribution], out: Path) -> Path:
    """A 100 % stacked bar per criterion: the scale's scores, then not evaluable (grey)."""
    scores = list(rows[0].counts)
    figure, axis = new_figure(7.6, 1.5 + 0.5 * len(rows))
    categories: list[tuple[int | None, str, Any]] = [
        *((s, str(s), c) for s, c in zip(scores, _score_colours(len(scores)), strict=True)),
        (None, "not evaluable", "#bdbdbd")]
    for y, row in enumerate(rows):
        left = 0.0
        for score, name, colour in categories:
            pct = row.pct(score)
            axis.barh(y, pct, left=left, color=colour, edgecolor="white", linewidth=0.6,
                      label=name if y == 0 else None)
            if pct >= 7:
                axis.text(left + pct / 2, y, f"{pct:.0f}", ha="center", va="center", fontsize=7,
                          color="white" if _dark(colour) else "black")
            left += pct
    axis.set_yticks(range(len(rows)), [r.label for r in rows])
    axis.set_ylim(len(rows) - 0.5, -0.5)
    counts = axis.secondary_yaxis("right")  # tick labels are laid out with the axes, so never cut off
    counts.set_yticks(range(len(rows)), [f"n = {r.items}" + (f"\n{r.not_evaluable} not evaluable" if r.not_evaluable
                                                             else "") for r in rows])
    counts.tick_params(length=0, labelsize=7)
    counts.spines["right"].set_visible(False)
    axis.set_xlim(0, 100)
    axis.set_xlabel("conclusions (% of items; each bar sums to 100)")
    figure.suptitle("Judge outcomes of the multidisciplinary conclusions by criterion (ai-consilium.txt Fig. 6)",
                    fontsize=9.5, fontweight="bold")
    figure.legend(loc="outside lower center", ncols=len(categories), title="score")
    return save_figure(figure, out, "fig6_score_distributions")


def draw_fig7(rows: list[CaseMeans], out: Path) -> Path:
    """Small multiples, one histogram per criterion, the median as a red line."""
    columns = min(4, len(rows))
    lines = -(-len(rows) // columns)
    figure, axes = new_figure(2.5 * columns + 0.6, 2.3 * lines + 0.6, rows=lines, columns=columns, squeeze=False)
    tallest = max(max(r.bins) for r in rows)
    low, high = rubric_scale()
    for axis, row in zip(axes.flat, rows, strict=False):
        axis.bar(row.edges[:-1], row.bins, width=BIN, align="edge", color="#6baed6", edgecolor="white")
        axis.axvline(row.median, color="#d62728", linewidth=1.4)
        axis.text(0.98, 0.97, f"median {row.median:.2f}", transform=axis.transAxes, color="#d62728", fontsize=6.5,
                  ha="right", va="top")
        axis.set_title(row.label if len(row.label) < 40 else "\n".join(_two_lines(row.label)), fontsize=7.5)
        axis.set_xlim(low, high)
        axis.set_xticks(range(low, high + 1))
        axis.set_xticks(row.edges, minor=True)
        axis.set_ylim(0, tallest * 1.25)
        integer_axis(axis, "y")
        axis.text(0.02, 0.97, f"n = {len(row.means)} cases", transform=axis.transAxes, va="top", fontsize=6.5)
    for axis in list(axes.flat)[len(rows):]:
        axis.set_visible(False)
    figure.supxlabel("case-level mean judge score (numeric scores of every model and format)")
    figure.supylabel("cases")
    figure.suptitle("Case-level mean scores of the conclusions, 0.5-point bins (ai-consilium.txt Fig. 7)",
                    fontsize=9)
    return save_figure(figure, out, "fig7_case_mean_scores")


def _two_lines(label: str) -> list[str]:
    words = label.split()
    half = len(label) // 2
    split = next((i for i in range(1, len(words)) if len(" ".join(words[:i])) >= half), len(words))
    return [" ".join(words[:split]), " ".join(words[split:])]


def draw_fig8(rows: list[RoundsGroup], out: Path) -> Path:
    """A: C1–C8 output mean ± population SD; B: % of outputs with a mean below 2; C: complexity mean
    ± population SD; each by completed review rounds, n outputs under each group."""
    figure, (a, b, c) = new_figure(9.0, 3.3, columns=3)
    xs = [GROUPS.index(r.rounds) for r in rows]  # every group keeps its place, an empty one shows n = 0
    outputs = {r.rounds: r.outputs for r in rows}
    names = [f"{g}\n(n = {outputs.get(g, 0)})" for g in GROUPS]
    low, high = rubric_scale()
    a.errorbar(xs, [r.mean for r in rows], yerr=[r.sd for r in rows], fmt="o", capsize=4, color="#08519c")
    a.set_ylim(low - 0.08, high + 0.08)  # a point on the scale's end stays whole
    a.set_ylabel("mean C1–C8 score")
    a.set_title("A  C1–C8 output mean ± SD")
    b.bar(xs, [r.below_2_pct for r in rows], color="#fd8d3c", width=0.6)
    b.bar_label(b.containers[0], [f"{r.below_2} ({r.below_2_pct:.1f}%)" for r in rows], padding=2, fontsize=7)
    b.set_ylim(0, 112)  # room for a label over a full bar
    b.set_yticks(range(0, 101, 20))
    b.set_ylabel("outputs with mean < 2 (%)")
    b.set_title("B  Output mean below 2")
    rated = [(x, r) for x, r in zip(xs, rows, strict=True) if r.complexity_mean is not None]
    c.errorbar([x for x, _ in rated], [r.complexity_mean for _, r in rated], yerr=[r.complexity_sd for _, r in rated],
               fmt="s", capsize=4, color="#54278f")
    for x, r in rated:
        if r.complexity_n == r.outputs:
            continue
        c.annotate(f"{r.complexity_n} rated", (x, low), textcoords="offset points", xytext=(0, 4), ha="center",
                   fontsize=6.5)
    c.set_ylim(low - 0.08, high + 0.08)
    c.set_ylabel("complexity score (criterion 10)")
    c.set_title("C  Case complexity ± SD")
    for axis in (a, b, c):
        axis.set_xticks(range(len(GROUPS)), names)
        axis.set_xlim(-0.6, len(GROUPS) - 0.4)
        axis.set_xlabel("completed review rounds")
    for axis in (a, c):
        axis.set_yticks(range(low, high + 1))
    figure.suptitle("Judge scores and case complexity by completed review rounds (ai-consilium.txt Fig. 8; "
                    "population SD)", fontsize=9)
    return save_figure(figure, out, "fig8_scores_by_rounds")
