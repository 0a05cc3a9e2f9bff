"""The turn-taking graph of one board meeting (docs/networks.md): speakers as nodes (the moderator and every
specialist at the table, those who never spoke included); an edge A → B says the floor went from A to B:

* ``after``: B's turn came right after A's (weight: how many times; a speaker's two turns in a row none);
* ``asked``: the moderator's turn gave B the floor (a question, ``addressed_to``);
* ``passed``: the moderator passed B the floor without a turn of its own (agents mode, ``floor: passed``);
* ``responds``: B's turn replies to A's turn (``responds_to``).

Centralities are computed on the simple directed graph of all four kinds together, unweighted (an edge counts
once, whatever its weight): ``networkx.degree_centrality`` ((in + out degree) / (n − 1)) and
``networkx.betweenness_centrality`` (shortest directed paths, normalised by (n − 1)(n − 2)).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx

from consilium.graphs.board.trace import BoardTrace
from consilium.roles.catalogue import load_catalogue

__all__ = ["MODERATOR", "centralities", "simple_graph", "turn_graph"]

MODERATOR = "Moderator"
_KINDS = ("after", "asked", "passed", "responds")


def turn_graph(trace: BoardTrace) -> nx.MultiDiGraph:
    """The meeting's graph, each node with its turns and centralities, each edge with its kind and weight."""
    categories = {r.label: r.category for r in trace.roles}
    spoken = Counter(t.role for t in trace.turns)
    graph = nx.MultiDiGraph(case_id=trace.case_id, variant=f"board-{trace.mode}", model=trace.model,
                            run_id=trace.run_id, stop_reason=trace.stop_reason or "", status=trace.status)
    for speaker in [MODERATOR, *categories, *spoken]:
        if speaker not in graph:
            graph.add_node(speaker, kind="speaker", label=speaker, moderator=speaker == MODERATOR,
                           category=_category(speaker, categories), turns=spoken.get(speaker, 0))
    counts: Counter[tuple[str, str, str]] = Counter()
    by_number = {t.number: t for t in trace.turns}
    for before, turn in zip(trace.turns, trace.turns[1:], strict=False):
        if before.role != turn.role:
            counts[(before.role, turn.role, "after")] += 1
    for turn in trace.turns:
        if turn.role == MODERATOR and turn.addressed_to:
            counts[(MODERATOR, turn.addressed_to, "asked")] += 1
        if turn.floor == "passed":
            counts[(MODERATOR, turn.role, "passed")] += 1
        answered = by_number.get(turn.responds_to) if turn.responds_to is not None else None
        if answered is not None and answered.role != turn.role:
            counts[(answered.role, turn.role, "responds")] += 1
    for (source, target, kind), weight in sorted(counts.items(), key=lambda c: (_KINDS.index(c[0][2]), c[0])):
        for node in (source, target):
            if node not in graph:
                graph.add_node(node, kind="speaker", label=node, moderator=False,
                               category=_category(node, categories), turns=0)
        graph.add_edge(source, target, key=f"{kind}:{source}->{target}", kind=kind, weight=weight)
    for node, values in centralities(graph).items():
        graph.nodes[node].update(values)
    return graph


def _category(speaker: str, categories: dict[str, str]) -> str:
    """The moderator's ``moderator``; a specialist's the table's role category, else (a single-mode meeting
    has no roles, only the speakers the one model wrote) its label mapped through the role catalogue."""
    if speaker == MODERATOR:
        return "moderator"
    return categories.get(speaker) or load_catalogue().map_label(speaker).id


def simple_graph(graph: nx.MultiDiGraph) -> nx.DiGraph:
    """The directed graph the centralities read: an edge where any kind links two speakers."""
    simple = nx.DiGraph()
    simple.add_nodes_from(graph.nodes)
    simple.add_edges_from((u, v) for u, v in graph.edges() if u != v)
    return simple


def centralities(graph: nx.MultiDiGraph) -> dict[str, dict[str, Any]]:
    """Per speaker: degree and betweenness centrality (unweighted; module docstring), rounded to 6 decimals."""
    simple = simple_graph(graph)
    degree = nx.degree_centrality(simple) if len(simple) > 1 else dict.fromkeys(simple, 0.0)
    between = nx.betweenness_centrality(simple, normalized=True)
    return {n: {"degree_centrality": round(degree[n], 6), "betweenness_centrality": round(between[n], 6)}
            for n in simple}
