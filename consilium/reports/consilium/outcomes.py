"""Controller-recorded outcomes of a consilium cohort, per model and pooled: Table 3, Table 4 and the
panel composition of Fig. 2b/2c (ai-consilium.txt)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from consilium.agents.records import FORMATS
from consilium.graphs.arms import deliberates
from consilium.reports.consilium.data import STOPS, CohortData, RoleRow
from consilium.reports.consilium.stats import POOLED, number, percent
from consilium.runfolder.rows import ArmRow

__all__ = ["models_of", "panel_sizes", "role_categories", "role_label_mapping", "table3", "table4"]


def models_of(data: CohortData) -> list[str]:
    """The cohort's models, sorted."""
    return sorted({a.model for a in data.arms if a.model})


def _formats(data: CohortData) -> list[str]:
    seen = {a.format for a in data.arms}
    return [f for f in FORMATS if f in seen] + sorted(seen - set(FORMATS))


def _outcome_row(model: str, fmt: str, arms: list[ArmRow], *, rounds: bool = True) -> dict[str, Any]:
    done = [a for a in arms if a.completed]
    n = len(done)
    if not rounds:  # a protocol without review rounds: the same columns, the deliberation ones empty
        empty = dict.fromkeys(_outcome_row(model, fmt, []))
        return {**empty, "model": model, "format": fmt, "arms": len(arms), "completed": n, "failed": len(arms) - n}
    dissent = [a.get("r1_dissent") for a in done if a.get("r1_dissent") is not None]
    stops = Counter(a.stop_reason for a in done)
    unanimous = sum(d == 0 for d in dissent)
    row: dict[str, Any] = {
        "model": model, "format": fmt, "arms": len(arms), "completed": n, "failed": len(arms) - n,
        "r1_dissent_mean_pct": number(100 * statistics.fmean(dissent)) if dissent else None,
        "r1_unanimous": unanimous, "r1_unanimous_pct": percent(unanimous, n),
        "mean_rounds": number(statistics.fmean(a.get("rounds") for a in done)) if done else None}
    for stop in STOPS:
        row[stop], row[f"{stop}_pct"] = stops[stop], percent(stops[stop], n)
    return row


def table3(data: CohortData) -> list[dict[str, Any]]:
    """Table 3: per model and format, then pooled over the models per format (Fig. 3c's last row):
    ``arms`` (in arms.csv), ``completed``, ``failed``; over completed arms, the mean round-1 dissent
    (% of the panel dissenting), arms unanimous in round 1, the mean number of review rounds, and the
    arms stopping at consensus, with no change and at the round limit; each count with its % of the
    completed arms (empty for a protocol without review rounds, such as the single baseline)."""
    rows = []
    for model in [*models_of(data), POOLED]:
        for fmt in _formats(data):
            arms = [a for a in data.arms if a.format == fmt and model in (POOLED, a.get("model"))]
            if arms:
                rows.append(_outcome_row(model, fmt, arms, rounds=deliberates(data.protocol)))
    return rows


_TRANSITIONS = (("no", "yes"), ("no", "no"), ("yes", "no"), ("yes", "yes"))


def table4(data: CohortData) -> list[dict[str, Any]]:
    """Table 4: role-level vote transitions between rounds r and r + 1 among arms that reached round
    r + 1, per model (both formats) and pooled. ``no`` is a dissent, ``yes`` an accept; each count's
    percentage is within the roles' vote in round r (no → yes + no → no = 100 %). In a cohort run in
    replicates each replicate is an arm of its own: its transitions are counted, and ``arms`` counts it."""
    by_arm: dict[tuple[str, str, str, str], dict[int, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for model, fmt, case, rnd, role, vote, replicate in data.votes:
        by_arm[(model, fmt, case, replicate)][rnd][role] = "no" if vote == "dissent" else "yes"
    counts: dict[tuple[str, int], Counter[tuple[str, str]]] = defaultdict(Counter)
    arms: Counter[tuple[str, int]] = Counter()
    for (model, *_), rounds in by_arm.items():
        for rnd in sorted(rounds):
            if rnd + 1 not in rounds:
                continue
            for who in (model, POOLED):
                arms[(who, rnd)] += 1
                for role, before in rounds[rnd].items():
                    after = rounds[rnd + 1].get(role)
                    if after:
                        counts[(who, rnd)][(before, after)] += 1
    rows = []
    for model in [*models_of(data), POOLED]:
        for rnd in sorted(r for m, r in arms if m == model):
            c = counts[(model, rnd)]
            row: dict[str, Any] = {"model": model, "transition": f"R{rnd}->R{rnd + 1}", "from_round": rnd,
                                   "arms": arms[(model, rnd)]}
            for before, after in _TRANSITIONS:
                total = c[(before, "yes")] + c[(before, "no")]
                row[f"{before}_to_{after}"] = c[(before, after)]
                row[f"{before}_to_{after}_pct"] = percent(c[(before, after)], total)
            rows.append(row)
    return rows


def _panels(data: CohortData) -> dict[tuple[str, str, str], list[RoleRow]]:
    """(model, case, replicate) → the panel's roles: each replicate's panel counts as one."""
    panels: dict[tuple[str, str, str], list[RoleRow]] = defaultdict(list)
    for role in data.roles:
        panels[(role.model, role.case_id, role.replicate)].append(role)
    return panels


def role_categories(data: CohortData) -> list[dict[str, Any]]:
    """Fig. 2b/2c: per model and pooled, each role category's assignments: as the primary role (% of
    the panels, one primary each), as a supporting role (% of the supporting assignments), in all
    (% of all assignments), and the panels including it (% of the panels). Categories are ranked by
    all assignments pooled, as Fig. 2c ranks them; a category a model never assigned shows 0."""
    names = {r.category: r.category_name for r in data.roles}
    pooled = Counter(r.category for r in data.roles)
    order = sorted(names, key=lambda c: (-pooled[c], names[c]))
    panels = _panels(data)
    rows = []
    for model in [*sorted({r.model for r in data.roles}), POOLED]:
        mine = [r for r in data.roles if model in (POOLED, r.model)]
        n_panels = sum(1 for m, *_ in panels if model in (POOLED, m))
        supporting_total = sum(not r.primary for r in mine)
        for category in order:
            of = [r for r in mine if r.category == category]
            primary = sum(r.primary for r in of)
            including = sum(1 for (m, *_), roles in panels.items() if model in (POOLED, m)
                            and any(r.category == category for r in roles))
            rows.append({"model": model, "category": category, "category_name": names[category],
                         "primary": primary, "primary_pct": percent(primary, n_panels),
                         "supporting": len(of) - primary, "supporting_pct": percent(len(of) - primary,
                                                                                    supporting_total),
                         "assignments": len(of), "assignments_pct": percent(len(of), len(mine)),
                         "panels": including, "panels_pct": percent(including, n_panels)})
    return rows


def panel_sizes(data: CohortData) -> list[dict[str, Any]]:
    """Fig. 2b's panel architecture: per model and pooled, the panels with each number of roles."""
    panels = _panels(data)
    rows = []
    for model in [*sorted({m for m, *_ in panels}), POOLED]:
        sizes = Counter(len(roles) for (m, *_), roles in panels.items() if model in (POOLED, m))
        total = sum(sizes.values())
        rows += [{"model": model, "roles": size, "panels": n, "panels_pct": percent(n, total)}
                 for size, n in sorted(sizes.items())]
    return rows


def role_label_mapping(data: CohortData) -> list[dict[str, Any]]:
    """The exact-label → category mapping kept with the artifacts (Fig. 2c caption): each label the
    models assigned, its catalogue category as recorded in the trace, and how often it was assigned
    as primary and as supporting, per model and pooled."""
    rows = []
    for model in [*sorted({r.model for r in data.roles}), POOLED]:
        counts: dict[tuple[str, str, str], Counter[bool]] = defaultdict(Counter)
        for r in data.roles:
            if model in (POOLED, r.model):
                counts[(r.label, r.category, r.category_name)][r.primary] += 1
        rows += [{"model": model, "label": label, "category": category, "category_name": name,
                  "assignments": c[True] + c[False], "primary": c[True], "supporting": c[False]}
                 for (label, category, name), c in sorted(counts.items())]
    return rows
