"""The langgraph.json entry point builds a runnable graph."""

from __future__ import annotations

import json
from pathlib import Path

from consilium.graphs.consilium.dev import make_graph

ROOT = Path(__file__).resolve().parents[1]


def test_langgraph_json_points_at_a_graph_factory(tmp_path: Path) -> None:
    spec = json.loads((ROOT / "langgraph.json").read_text())
    path, _, name = spec["graphs"]["consilium"].partition(":")
    assert (ROOT / path).is_file() and name == "make_graph"
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"default": "x"}))
    graph = make_graph({"configurable": {"model": f"scripted:{script}", "format": "free-form"}})
    nodes = set(graph.get_graph().nodes)
    assert {"assign_roles", "opinion", "synthesise", "vote", "tally", "revise"} <= nodes
