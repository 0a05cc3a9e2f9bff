"""Pictures of the graphs, small, in the house style (consilium/reports/figures/style.py): an arm's
deliberation graph (roles on the left, then report versions and review rounds in the order they happened),
a board meeting's turn-taking graph, and the cohort's co-assignment network."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import networkx as nx

from consilium.reports.figures.style import new_figure, paper_style, save_figure

__all__ = ["draw_coassignment", "draw_deliberation", "draw_turns"]

_ACCEPT, _DISSENT, _TAKEN, _GREY = "#2ca02c", "#d62728", "#9467bd", "#9a9a9a"
#: The picture's edge styles: name, colour, dashed, width.
_LEGEND = (("opinion", _GREY, False, 1.0), ("accept", _ACCEPT, False, 1.0), ("dissent", _DISSENT, False, 1.0),
           ("taken up", _TAKEN, False, 1.4), ("not taken up", _TAKEN, True, 1.0), ("revision", "black", False, 1.6))
#: The paper's blue and orange, lightened so that a black label reads on them.
_NODE_COLOURS = {"role": "#aec7e8", "report": "#ffbb78", "round": "#c7c7c7"}


def _label(text: str, width: int = 14) -> str:
    """A node's label as drawn: a character no font has (a control character) as its escape, ``$`` kept
    literal (matplotlib reads ``$…$`` as mathematics), at most two wrapped lines."""
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    shown = shown.replace("$", r"\$")
    return "\n".join(textwrap.wrap(shown, width)[:2]) or shown


def _positions(graph: nx.MultiDiGraph) -> dict[str, tuple[float, float]]:
    """Roles stacked at x = 0; report vN at x = 2N − 1 above them, round r at x = 2r below them (so the dissents
    rise to the revisions and the votes fall to the rounds)."""
    roles = [n for n, d in graph.nodes(data=True) if d["kind"] == "role"]
    high = max(0.5, (len(roles) - 1) / 2) + 0.8
    pos: dict[str, tuple[float, float]] = {n: (0.0, float(len(roles) - 1 - i) - (len(roles) - 1) / 2)
                                           for i, n in enumerate(roles)}
    for node, data in graph.nodes(data=True):
        if data["kind"] == "report":
            pos[node] = (2.0 * int(data["version"]) - 1, high)
        elif data["kind"] == "round":
            pos[node] = (2.0 * int(data["round"]), -high)
    return pos


def _edges(graph: nx.MultiDiGraph, kind: str, **match: Any) -> list[tuple[str, str]]:
    return [(u, v) for u, v, d in graph.edges(data=True)
            if d["kind"] == kind and all(d.get(k) == want for k, want in match.items())]


def draw_deliberation(graph: nx.MultiDiGraph, out: Path, stem: str) -> Path:
    """The arm's graph as ``stem.png`` (and ``.pdf``) in ``out``; vote transitions are in the GraphML only."""
    pos = _positions(graph)
    width = 2.4 + 0.5 * max((x for x, _ in pos.values()), default=1.0)
    with paper_style():
        figure, ax = new_figure(min(width, 9.0), 3.2)
        kinds = [d["kind"] for _, d in graph.nodes(data=True)]
        nx.draw_networkx_nodes(graph, pos, ax=ax, node_size=520, node_color=[_NODE_COLOURS[k] for k in kinds])
        nx.draw_networkx_labels(graph, pos, ax=ax, font_size=6,
                                labels={n: _label(str(d["label"])) for n, d in graph.nodes(data=True)})
        styles: list[tuple[list[tuple[str, str]], str, str, float]] = [
            (_edges(graph, "opinion"), _GREY, "solid", 0.8), (_edges(graph, "review"), "black", "solid", 0.8),
            (_edges(graph, "revision"), "black", "solid", 1.6),
            (_edges(graph, "vote", vote="accept"), _ACCEPT, "solid", 0.6),
            (_edges(graph, "vote", vote="dissent"), _DISSENT, "solid", 0.9),
            (_edges(graph, "dissent", taken_up=True), _TAKEN, "solid", 1.4),
            (_edges(graph, "dissent", taken_up=False), _TAKEN, "dashed", 1.0)]
        for edges, colour, style, line in styles:
            if edges:
                nx.draw_networkx_edges(graph, pos, ax=ax, edgelist=edges, edge_color=colour, style=style, width=line,
                                       node_size=520, arrowsize=7, connectionstyle="arc3,rad=0.08")
        from matplotlib.lines import Line2D

        legend = [Line2D([], [], color=c, linestyle="dashed" if dashed else "solid", linewidth=w, label=name)
                  for name, c, dashed, w in _LEGEND]
        ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=6, fontsize=6)
        ax.set_title(f"{graph.graph.get('case_id', '')} · {graph.graph.get('variant', '')} · "
                     f"stop: {graph.graph.get('stop_reason') or '–'}")
        ax.set_axis_off()
        return save_figure(figure, out, stem)


def draw_turns(graph: nx.MultiDiGraph, out: Path, stem: str) -> Path:
    """A meeting's turn-taking graph: node size by turns, edge width by the times the floor went that way."""
    simple = nx.DiGraph()
    simple.add_nodes_from(graph.nodes(data=True))
    for u, v, d in graph.edges(data=True):
        if u != v:
            simple.add_edge(u, v, weight=simple.get_edge_data(u, v, {"weight": 0})["weight"] + int(d["weight"]))
    pos = nx.circular_layout(simple)
    with paper_style():
        figure, ax = new_figure(3.6, 3.0)
        nx.draw_networkx_nodes(simple, pos, ax=ax, node_color=[_NODE_COLOURS["report" if d["moderator"] else "role"]
                                                               for _, d in simple.nodes(data=True)],
                               node_size=[300 + 120 * int(d["turns"]) for _, d in simple.nodes(data=True)])
        nx.draw_networkx_labels(simple, pos, ax=ax, font_size=6, labels={n: _label(str(n)) for n in simple})
        nx.draw_networkx_edges(simple, pos, ax=ax, width=[0.6 + 0.5 * d["weight"] for *_, d in simple.edges(data=True)],
                               arrowsize=7, connectionstyle="arc3,rad=0.12", edge_color=_GREY, node_size=500)
        ax.margins(0.15)
        ax.set_title(f"{graph.graph.get('case_id', '')} · {graph.graph.get('variant', '')}")
        ax.set_axis_off()
        return save_figure(figure, out, stem)


def draw_coassignment(graph: nx.Graph, out: Path, stem: str) -> Path:
    """Categories on a circle, node size by assignments, edge width by the arms both were on."""
    pos = nx.circular_layout(graph)
    with paper_style():
        figure, ax = new_figure(4.0, 3.6)
        nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=_NODE_COLOURS["role"],
                               node_size=[200 + 60 * int(d["assignments"]) for _, d in graph.nodes(data=True)])
        nx.draw_networkx_labels(graph, pos, ax=ax, font_size=6,
                                labels={n: _label(str(d["label"])) for n, d in graph.nodes(data=True)})
        weights = [int(d["weight"]) for *_, d in graph.edges(data=True)]
        top = max(weights, default=1)
        nx.draw_networkx_edges(graph, pos, ax=ax, width=[0.5 + 2.5 * w / top for w in weights], edge_color=_GREY)
        nx.draw_networkx_edge_labels(graph, pos, ax=ax, font_size=6, edge_labels={
            (a, b): str(d["weight"]) for a, b, d in graph.edges(data=True)})
        ax.margins(0.15)
        ax.set_title(f"Role co-assignment ({graph.graph.get('panels', 0)} panels)")
        ax.set_axis_off()
        return save_figure(figure, out, stem)
