"""The consilium's dynamics (ai-consilium.txt Fig. 3a–c) over completed arms: consensus by round,
dissent before and after each revision, and the outcomes by model. The stop reasons (Fig. 4) are in
:mod:`consilium.reports.figures.stops`.

Dissent in a round is the share of the panel's votes that dissent (the trace's ``dissent_fraction``),
recomputed from the recorded votes.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from consilium.reports.compare import CohortData
from consilium.reports.figures.style import (
    FORMAT_COLOURS,
    FORMAT_MARKERS,
    POOLED,
    completed_arms,
    format_label,
    formats_of,
    integer_axis,
    models_of,
    new_figure,
    save_figure,
)
from consilium.stats import cluster_bootstrap

__all__ = [
    "ConsensusByRound",
    "DissentReduction",
    "ModelOutcome",
    "consensus_by_round",
    "dissent_reductions",
    "draw_fig3a",
    "draw_fig3b",
    "draw_fig3c",
    "outcomes_by_model",
]


@dataclass(frozen=True)
class ConsensusByRound:
    """Fig. 3a for one format: of ``arms`` completed arms, those entering round r (r = 1, 2, …) and
    those at consensus by the end of round r."""

    format: str
    arms: int
    entering: tuple[int, ...]
    consensus: tuple[int, ...]

    def pct(self, index: int) -> float:
        return 100 * self.consensus[index] / self.arms if self.arms else 0.0


def consensus_by_round(data: CohortData) -> list[ConsensusByRound]:
    """Per format, rounds 1 … the cohort's last round (shared by the formats, so their lines align)."""
    done = completed_arms(data)
    last = max((a.get("rounds") for a in done), default=0)
    rows = []
    for fmt in formats_of(a.format for a in done):
        mine = [a for a in done if a.format == fmt]
        rounds = range(1, last + 1)
        rows.append(ConsensusByRound(
            fmt, len(mine), tuple(sum(a.get("rounds") >= r for a in mine) for r in rounds),
            tuple(sum(a.stop_reason == "consensus" and a.get("rounds") <= r for a in mine) for r in rounds)))
    return rows


@dataclass(frozen=True)
class DissentReduction:
    """Fig. 3b: among the ``arms`` of a format with votes in rounds r and r + 1, the mean of (dissent
    in r − dissent in r + 1), in percentage points, with its case-clustered bootstrap 95 % interval. In a
    cohort run in replicates (``averaged``) ``arms`` counts every replicate compared, and the mean is over
    the (model, format, case)s, each the mean of its replicates."""

    format: str
    from_round: int
    arms: int
    mean: float
    ci_low: float
    ci_high: float
    averaged: bool = False


def _dissent(data: CohortData) -> dict[tuple[str, str, str, str], dict[int, float]]:
    """(model, format, case, replicate) → round → % of the votes dissenting."""
    votes: dict[tuple[str, str, str, str], dict[int, Counter[bool]]] = defaultdict(lambda: defaultdict(Counter))
    for model, fmt, case, rnd, _, vote, replicate in data.votes:
        votes[(model, fmt, case, replicate)][rnd][vote == "dissent"] += 1
    return {arm: {r: 100 * c[True] / c.total() for r, c in rounds.items()} for arm, rounds in votes.items()}


def dissent_reductions(data: CohortData, *, bootstrap: int = 10_000, seed: int = 0) -> list[DissentReduction]:
    """Per revision (round r → r + 1) and format: the interval resamples cases, every arm of a case
    (all models) together, ``bootstrap`` times from ``seed`` (ai-consilium.txt Fig. 3b: 10,000
    DOI-clustered resamples). The replicates of a (model, format, case) are averaged first, so a case's
    cluster holds one value per model however many replicates it has."""
    dissent = _dissent(data)
    averaged = any(replicate for *_, replicate in dissent)
    revisions = sorted({r for rounds in dissent.values() for r in rounds if r + 1 in rounds})
    rows = []
    for rnd in revisions:
        for fmt in formats_of(f for _, f, *_ in dissent):
            slots: dict[tuple[str, str], list[float]] = defaultdict(list)  # (case, model) → each replicate's
            for (model, f, case, _), rounds in sorted(dissent.items()):
                if f == fmt and rnd in rounds and rnd + 1 in rounds:
                    slots[(case, model)].append(rounds[rnd] - rounds[rnd + 1])
            if not slots:
                continue
            clusters: dict[str, list[float]] = defaultdict(list)
            for (case, _), reductions in slots.items():
                clusters[case].append(statistics.fmean(reductions))
            values = [v for vs in clusters.values() for v in vs]
            low, high = cluster_bootstrap(clusters, draws=bootstrap, seed=seed, key=f"fig3b|{fmt}|{rnd}")
            mean = statistics.fmean(values)  # no draw, no interval: a bar of no width at the mean
            rows.append(DissentReduction(fmt, rnd, sum(len(v) for v in slots.values()), mean,
                                         mean if low is None else low, mean if high is None else high, averaged))
    return rows


@dataclass(frozen=True)
class ModelOutcome:
    """Fig. 3c (Table 3's outcomes): one model's (or the pool's) completed arms of one format."""

    model: str
    format: str
    arms: int
    r1_dissent_pct: float | None  # mean round-1 dissent, % of the panel
    r1_unanimous_pct: float | None  # % of the arms with no dissent in round 1
    mean_rounds: float | None
    consensus_pct: float | None  # % of the arms stopping at consensus


def outcomes_by_model(data: CohortData) -> list[ModelOutcome]:
    """Per model (sorted) and format, then the pool of every model per format (the last row)."""
    done = completed_arms(data)
    rows = []
    for model in [*models_of(data), POOLED]:
        for fmt in formats_of(a.format for a in done):
            arms = [a for a in done if a.format == fmt and model in (POOLED, a.model)]
            if not arms:
                continue
            dissent = [100 * a.get("r1_dissent") for a in arms if a.get("r1_dissent") is not None]
            rows.append(ModelOutcome(
                model, fmt, len(arms), statistics.fmean(dissent) if dissent else None,
                100 * sum(d == 0 for d in dissent) / len(arms) if dissent else None,
                statistics.fmean(a.get("rounds") for a in arms),
                100 * sum(a.stop_reason == "consensus" for a in arms) / len(arms)))
    return rows


def draw_fig3a(rows: list[ConsensusByRound], out: Path) -> Path:
    """Cumulative % at consensus by round, one line per format, and the arms entering each round."""
    figure, axis = new_figure(5.6, 3.8)
    last = len(rows[0].entering)
    xs = list(range(1, last + 1))
    for i, row in enumerate(rows):  # later lines thinner and dashed, so equal lines show both
        axis.plot(xs, [row.pct(r) for r in range(last)], marker=FORMAT_MARKERS.get(row.format, "o"),
                  markersize=7 - 2.5 * min(i, 1), linewidth=2 - 0.8 * min(i, 1), linestyle="-" if i == 0 else "--",
                  color=FORMAT_COLOURS.get(row.format), label=f"{format_label(row.format)} (n = {row.arms} arms)")
    entering = [" / ".join(str(r.entering[i]) for r in rows) for i in range(last)]
    axis.set_xticks(xs, [f"{x}\n({n})" for x, n in zip(xs, entering, strict=True)])
    axis.set_xlim(0.6, last + 0.4)
    axis.set_ylim(-3, 103)  # a point at 0 or 100 stays whole
    axis.set_yticks(range(0, 101, 20))
    formats = " / ".join(format_label(r.format).lower() for r in rows)
    axis.set_xlabel(f"review round (round 1 reviews the initial report)\n(arms entering the round: {formats})")
    axis.set_ylabel("arms at consensus, cumulative (%)")
    axis.set_title("Cumulative consensus by round (ai-consilium.txt Fig. 3a)")
    axis.legend(loc="lower right")
    return save_figure(figure, out, "fig3a_cumulative_consensus")


def draw_fig3b(rows: list[DissentReduction], bootstrap: int, out: Path) -> Path:
    """Forest plot: per revision and format, the mean reduction in dissent with its 95 % CI; the values
    and the arms compared in a column at right."""
    figure, (axis, side) = new_figure(7.4, 1.7 + 0.42 * len(rows), columns=2, sharey=True,
                                      gridspec_kw={"width_ratios": [4, 1.25]})
    ys = list(range(len(rows)))
    for y, row in zip(ys, rows, strict=True):
        axis.errorbar(row.mean, y, xerr=[[row.mean - row.ci_low], [row.ci_high - row.mean]], capsize=3,
                      marker=FORMAT_MARKERS.get(row.format, "o"), color=FORMAT_COLOURS.get(row.format))
        side.text(0.0, y, f"{row.mean:.1f} [{row.ci_low:.1f}, {row.ci_high:.1f}]", va="center", fontsize=7.5)
        side.text(1.0, y, str(row.arms), va="center", ha="right", fontsize=7.5)
    side.text(0.0, -0.9, "mean [95% CI]", va="center", fontsize=7.5, fontweight="bold")
    side.text(1.0, -0.9, "arms", va="center", ha="right", fontsize=7.5, fontweight="bold")
    side.set_xlim(0, 1)
    side.axis("off")
    for fmt in formats_of(r.format for r in rows):
        axis.plot([], [], marker=FORMAT_MARKERS.get(fmt, "o"), color=FORMAT_COLOURS.get(fmt), linestyle="",
                  label=format_label(fmt))
    axis.axvline(0, color="grey", linewidth=0.8, linestyle="--")
    axis.set_yticks(ys, [f"R{r.from_round} → R{r.from_round + 1}, {format_label(r.format)}" for r in rows])
    axis.set_ylim(len(rows) - 0.5, -1.3)  # top down, a free row at the top for the column heads
    axis.set_xlim(-105, 105)
    averaged = "; replicates averaged within model, format and case" if any(r.averaged for r in rows) else ""
    axis.set_xlabel("reduction in dissent after the revision (percentage points of the panel's votes)\n"
                    f"mean with 95% CI from a case-clustered bootstrap, {bootstrap:,} resamples{averaged}")
    axis.legend(loc="lower left")
    figure.suptitle("Dissent before and after each revision (ai-consilium.txt Fig. 3b)", fontsize=9.5,
                    fontweight="bold")
    return save_figure(figure, out, "fig3b_dissent_reduction")


_OUTCOMES = (("r1_dissent_pct", "Round-1 dissent (mean %)"), ("r1_unanimous_pct", "Unanimous in round 1 (%)"),
             ("mean_rounds", "Mean review rounds"), ("consensus_pct", "Report consensus (%)"))


def draw_fig3c(rows: list[ModelOutcome], out: Path) -> Path:
    """Dot plots, one per outcome: a row per model (pooled last), a marker per format, joined by a line."""
    models = list(dict.fromkeys(r.model for r in rows))
    figure, axes = new_figure(10.0, 1.3 + 0.36 * len(models), columns=len(_OUTCOMES), sharey=True)
    by_model: dict[str, list[ModelOutcome]] = defaultdict(list)
    for row in rows:
        by_model[row.model].append(row)
    most_rounds = max((r.mean_rounds or 1 for r in rows), default=1)
    for axis, (key, title) in zip(axes, _OUTCOMES, strict=True):
        for y, model in enumerate(models):
            points = [(getattr(r, key), r.format) for r in by_model[model] if getattr(r, key) is not None]
            axis.plot([x for x, _ in points], [y] * len(points), color="grey", linewidth=1, zorder=1)
            for x, fmt in points:
                # the second format's marker smaller and on top, so equal values show both
                axis.scatter(x, y, marker=FORMAT_MARKERS.get(fmt, "o"), color=FORMAT_COLOURS.get(fmt),
                             zorder=2 + (fmt != rows[0].format), s=36 if fmt == rows[0].format else 20)
        if key == "mean_rounds":
            axis.set_xlim(0.8, max(2, math.ceil(most_rounds)) + 0.2)
            integer_axis(axis)
        else:
            axis.set_xlim(-5, 105)
        axis.set_title(title)
        axis.axhline(len(models) - 1.5, color="black", linewidth=0.6)
        axis.grid(axis="x", linewidth=0.3)
    counts = {m: " / ".join(f"{r.arms} {format_label(r.format)[0]}" for r in by_model[m]) for m in models}
    axes[0].set_yticks(range(len(models)), [f"{m}\n(n = {counts[m]})" for m in models])
    axes[0].invert_yaxis()
    for fmt in formats_of(r.format for r in rows):
        axes[-1].scatter([], [], marker=FORMAT_MARKERS.get(fmt, "o"), color=FORMAT_COLOURS.get(fmt),
                         label=format_label(fmt))
    figure.legend(loc="outside lower center", ncols=2)
    figure.suptitle("Consilium outcomes by model and format, pooled row last (ai-consilium.txt Fig. 3c); "
                    "n = completed arms, F free-form, S structured", fontsize=9)
    return save_figure(figure, out, "fig3c_outcomes_by_model")
