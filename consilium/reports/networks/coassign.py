"""The cohort's role co-assignment network (docs/networks.md): ai-consilium.txt Fig. 2c as a graph.

Nodes are role categories of the catalogue, with Fig. 2c's numbers: how many assignments put the category on
a panel as primary and as supporting, and its share of each (separate primary and supporting denominators,
as the figure's caption has them). An edge joins two categories that sat on one panel; its ``weight`` is
the number of panels (distinct assignments; the column ``arms``) that held both. A category on a panel
twice (two cardiology labels) counts twice in the node's assignments and once for the edges; there are no
self-loops. The caller passes one panel per
distinct role assignment of the arms it analyses (analyze.py: a consilium's two formats, and a cohort's
protocols, share one assignment, which counts once).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Any

import networkx as nx

from consilium.agents.records import AssignedRole

__all__ = ["coassignment_graph", "edge_rows", "node_rows"]


def coassignment_graph(panels: list[list[AssignedRole]]) -> nx.Graph:
    """The network of the panels (one list of roles per distinct assignment)."""
    primary: Counter[str] = Counter()
    supporting: Counter[str] = Counter()
    names: dict[str, str] = {}
    pairs: Counter[tuple[str, str]] = Counter()
    arms: Counter[str] = Counter()
    for roles in panels:
        for role in roles:
            (primary if role.primary else supporting)[role.category] += 1
            names.setdefault(role.category, role.category_name)
        present = sorted({r.category for r in roles})
        arms.update(present)
        pairs.update(combinations(present, 2))
    total_primary, total_supporting = sum(primary.values()), sum(supporting.values())
    graph = nx.Graph(panels=len(panels), assignments=total_primary + total_supporting)
    for category in sorted(names):
        graph.add_node(category, label=names[category], primary=primary[category], supporting=supporting[category],
                       assignments=primary[category] + supporting[category], arms=arms[category],
                       primary_share=round(primary[category] / total_primary, 4) if total_primary else 0.0,
                       supporting_share=round(supporting[category] / total_supporting, 4) if total_supporting
                       else 0.0)
    for (a, b), weight in sorted(pairs.items()):
        graph.add_edge(a, b, weight=weight)
    return graph


def node_rows(graph: nx.Graph) -> list[dict[str, Any]]:
    """Fig. 2c's table: categories ranked by all assignments (then by name)."""
    rows = [{"category": n, "category_name": d["label"], "assignments": d["assignments"], "primary": d["primary"],
             "primary_share": d["primary_share"], "supporting": d["supporting"],
             "supporting_share": d["supporting_share"], "arms": d["arms"],
             "degree": graph.degree(n), "weighted_degree": graph.degree(n, weight="weight")}
            for n, d in graph.nodes(data=True)]
    return sorted(rows, key=lambda r: (-r["assignments"], r["category"]))


def edge_rows(graph: nx.Graph) -> list[dict[str, Any]]:
    return sorted(({"category_a": a, "category_b": b, "arms": d["weight"]} for a, b, d in graph.edges(data=True)),
                  key=lambda r: (-r["arms"], r["category_a"], r["category_b"]))
