"""Fig. 2b/2c of ai-consilium.txt: the role categories of the model-assigned panels, as primary and as
supporting roles, per model with a pooled row (2b) and ranked over every assignment (2c).

A panel is one (model, case): its formats share one role assignment, so it counts once (in a cohort run in
replicates, one (model, case, replicate): each replicate assigns its own). Each role's
category is the one its exact label mapped to (recorded in the trace's ``roles``). Primary and
supporting shares have separate denominators, as the Fig. 2c caption says: a model's primary
assignments (one per panel) and its supporting assignments.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from consilium.reports.compare import CohortData
from consilium.reports.figures.style import POOLED, new_figure, save_figure

__all__ = ["SHOWN", "CategoryShare", "draw_fig2b", "draw_fig2c", "role_shares"]


@dataclass(frozen=True)
class CategoryShare:
    """One model's (or the pool's) assignments of one role category."""

    model: str
    category: str
    category_name: str
    primary: int
    primary_total: int  # the model's primary assignments (= its panels)
    supporting: int
    supporting_total: int  # the model's supporting assignments
    panels: int

    @property
    def primary_pct(self) -> float:
        return 100 * self.primary / self.primary_total if self.primary_total else 0.0

    @property
    def supporting_pct(self) -> float:
        return 100 * self.supporting / self.supporting_total if self.supporting_total else 0.0


def role_shares(data: CohortData) -> list[CategoryShare]:
    """Per model (sorted) then pooled, every category in the order of Fig. 2c: by all assignments
    pooled, most first (ties by name); a category a model never assigned has zero counts."""
    names = {r.category: r.category_name for r in data.roles}
    everywhere = Counter(r.category for r in data.roles)
    order = sorted(names, key=lambda c: (-everywhere[c], names[c]))
    rows = []
    for model in [*sorted({r.model for r in data.roles}), POOLED]:
        mine = [r for r in data.roles if model in (POOLED, r.model)]
        primary = Counter(r.category for r in mine if r.primary)
        supporting = Counter(r.category for r in mine if not r.primary)
        panels = len({(r.model, r.case_id, r.replicate) for r in mine})
        rows += [CategoryShare(model, c, names[c], primary[c], primary.total(), supporting[c], supporting.total(),
                               panels) for c in order]
    return rows


#: Fig. 2b's columns: the categories most assigned, the rest pooled in one "other" column (Fig. 2c and
#: the CSV list them all).
SHOWN = 12


def _columns(shares: list[CategoryShare]) -> tuple[list[str], dict[tuple[str, str], tuple[float, float]]]:
    """Column names, and (model, column) → (primary %, supporting %)."""
    categories = list(dict.fromkeys(s.category for s in shares))
    names = {s.category: s.category_name for s in shares}
    shown = categories if len(categories) <= SHOWN + 1 else categories[:SHOWN]
    other = f"Other ({len(categories) - len(shown)} categories)"
    cells: dict[tuple[str, str], tuple[float, float]] = {}
    for s in shares:
        column = names[s.category] if s.category in shown else other
        primary, supporting = cells.get((s.model, column), (0.0, 0.0))
        cells[(s.model, column)] = (primary + s.primary_pct, supporting + s.supporting_pct)
    return [names[c] for c in shown] + ([other] if len(shown) < len(categories) else []), cells


def draw_fig2b(shares: list[CategoryShare], out: Path) -> Path:
    """Heat maps, models (pooled last) × categories: % of the model's primary assignments (left) and
    of its supporting assignments (right), each cell labelled; each row sums to 100."""
    models = list(dict.fromkeys(s.model for s in shares))
    columns, cells = _columns(shares)
    width = max(7.0, 2.4 + 2 * 0.5 * len(columns) + 1.0)
    figure, axes = new_figure(width, 1.9 + 0.38 * len(models), columns=2, sharey=True)
    for axis, (i, kind) in zip(axes, enumerate(("primary", "supporting")), strict=True):
        values = [[cells[(m, c)][i] for c in columns] for m in models]
        image = axis.imshow(values, cmap="Blues", vmin=0, vmax=100, aspect="auto")
        for y, line in enumerate(values):
            for x, value in enumerate(line):
                axis.text(x, y, f"{value:.0f}", ha="center", va="center", fontsize=7,
                          color="white" if value > 60 else "black")
        axis.set_xticks(range(len(columns)), columns, rotation=40, ha="right")
        axis.set_title(f"{kind.capitalize()} roles\n(% of {kind} assignments)")
        axis.axhline(len(models) - 1.5, color="black", linewidth=0.8)  # the pooled row below the line
        for spine in axis.spines.values():
            spine.set_visible(False)
        axis.tick_params(length=0)
    first = {s.model: s for s in reversed(shares)}
    axes[0].set_yticks(range(len(models)), [f"{m}\n{first[m].panels} panels, {first[m].supporting_total} supporting"
                                            for m in models])
    figure.colorbar(image, ax=axes, shrink=0.8, label="% of assignments")
    figure.suptitle("Role categories by model, pooled row last (ai-consilium.txt Fig. 2b)", fontsize=9)
    return save_figure(figure, out, "fig2b_role_categories_by_model")


def draw_fig2c(shares: list[CategoryShare], out: Path) -> Path:
    """Pooled categories ranked by all assignments (top first): primary and supporting bars, each with
    its count and % of its own denominator."""
    pooled = [s for s in shares if s.model == POOLED]
    figure, axis = new_figure(7.0, 1.4 + 0.36 * len(pooled))
    height = 0.38
    ys = range(len(pooled))
    for offset, kind, colour in ((-height / 2, "primary", "#08519c"), (height / 2, "supporting", "#9ecae1")):
        values = [getattr(s, f"{kind}_pct") for s in pooled]
        total = getattr(pooled[0], f"{kind}_total") if pooled else 0
        bars = axis.barh([y + offset for y in ys], values, height, color=colour,
                         label=f"{kind} (% of {total} {kind} assignments)")
        axis.bar_label(bars, [f"{getattr(s, kind)} ({v:.1f}%)" for s, v in zip(pooled, values, strict=True)],
                       padding=2, fontsize=7)
    axis.set_yticks(list(ys), [f"{s.category_name}\n{s.primary + s.supporting} assignments" for s in pooled])
    axis.set_ylim(len(pooled) - 0.5, -0.5)  # ranked top down
    widest = max((max(s.primary_pct, s.supporting_pct) for s in pooled), default=0.0)
    axis.set_xlim(0, min(100.0, widest * 1.25 + 5) if widest < 80 else 118.0)  # room for the labels
    axis.set_xlabel("% of assignments (primary and supporting denominators separate)")
    figure.suptitle(f"Role categories ranked by all assignments (ai-consilium.txt Fig. 2c)\n"
                    f"{pooled[0].panels if pooled else 0} panels of every model", fontsize=9.5, fontweight="bold")
    figure.legend(loc="outside lower center", ncols=2)
    return save_figure(figure, out, "fig2c_role_categories_ranked")
