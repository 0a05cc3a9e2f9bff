"""Per role category, from the arms' deliberation graphs (docs/networks.md, "Metrics"):

* **influence**: of the category's dissents (dissenting votes), the share whose requested change the
  revision after that round took up (a dissent no revision followed counts, as not taken up);
* **persistence**: the mean length of the category's dissent runs, a run being a role's maximal stretch of
  consecutive rounds it dissented in (how many rounds its dissent survived); a role that dissents in rounds
  1 and 2, accepts in 3 and dissents in 4 has the runs 2 and 1;
* **conformity**: of its dissenters, the share that at some point voted accept in the round right after a
  dissent whose requested change was not taken up.

Each graph is read, not the trace, so the numbers are the graph's; a category with no dissent has no
influence, persistence or conformity (empty cells), only its counts.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from typing import Any

import networkx as nx

__all__ = ["CATEGORY_COLUMNS", "category_metrics", "dissenters"]

CATEGORY_COLUMNS = ["category", "category_name", "arms", "roles", "dissenters", "dissents", "taken_up", "influence",
                    "persistence", "conformed", "conformity"]


def _edges(graph: nx.MultiDiGraph, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(u, v, d) for u, v, d in graph.edges(data=True) if d.get("kind") == kind]


def dissenters(graph: nx.MultiDiGraph) -> dict[str, dict[str, Any]]:
    """Per role node with at least one dissent: its dissent rounds, the taken-up ones, the lengths of its
    dissent runs (consecutive dissenting rounds) and whether it conformed."""
    votes: dict[str, dict[int, str]] = defaultdict(dict)
    for role, rnd, data in _edges(graph, "vote"):
        votes[role][int(graph.nodes[rnd]["round"])] = str(data["vote"])
    taken = {(role, int(d["round"])) for role, _, d in _edges(graph, "dissent") if d["taken_up"]}
    found = {}
    for role, by_round in votes.items():
        rounds = sorted(r for r, v in by_round.items() if v == "dissent")
        if not rounds:
            continue
        runs = [1]
        for before, now in pairwise(rounds):
            if now == before + 1:
                runs[-1] += 1
            else:
                runs.append(1)
        conformed = any(by_round.get(r + 1) == "accept" and (role, r) not in taken for r in rounds)
        found[role] = {"rounds": rounds, "taken_up": sorted(r for r in rounds if (role, r) in taken),
                       "runs": runs, "conformed": conformed}
    return found


def _ratio(numerator: float, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def category_metrics(graphs: list[nx.MultiDiGraph]) -> list[dict[str, Any]]:
    """One row per role category over every arm's graph, in category order."""
    rows: dict[str, dict[str, Any]] = {}
    persistence: dict[str, list[int]] = defaultdict(list)
    for graph in graphs:
        found = dissenters(graph)
        seen: set[str] = set()
        for node, data in graph.nodes(data=True):
            if data.get("kind") != "role":
                continue
            category = str(data["category"])
            row = rows.setdefault(category, {"category": category, "category_name": data["category_name"], "arms": 0,
                                             "roles": 0, "dissenters": 0, "dissents": 0, "taken_up": 0,
                                             "conformed": 0})
            row["roles"] += 1
            if category not in seen:
                row["arms"] += 1
                seen.add(category)
            if node in found:
                one = found[node]
                row["dissenters"] += 1
                row["dissents"] += len(one["rounds"])
                row["taken_up"] += len(one["taken_up"])
                row["conformed"] += int(one["conformed"])
                persistence[category] += one["runs"]
    out = []
    for category in sorted(rows):
        row = rows[category]
        runs = persistence[category]
        out.append({**row, "influence": _ratio(row["taken_up"], row["dissents"]),
                    "persistence": _ratio(sum(runs), len(runs)), "conformity": _ratio(row["conformed"],
                                                                                    row["dissenters"])})
    return [{c: r[c] for c in CATEGORY_COLUMNS} for r in out]
