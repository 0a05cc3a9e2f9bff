"""The langgraph.json entry point builds a runnable graph."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from test_consilium_graph import write_script

from consilium.graphs.dev import factory

make_graph = factory("consilium")

ROOT = Path(__file__).resolve().parents[2]


def test_langgraph_json_points_at_a_graph_factory(tmp_path: Path) -> None:
    spec = json.loads((ROOT / "langgraph.json").read_text())
    path, _, name = spec["graphs"]["consilium"].partition(":")
    assert (ROOT / path).is_file() and name == "consilium"  # the one entry's factory for the consilium
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"default": "x"}))
    graph = make_graph({"configurable": {"model": f"scripted:{script}", "format": "free-form"}})
    # The dev graph runs the consilium's graph inside its second node; Studio draws it there (xray).
    nodes = {node.rpartition(":")[2] for node in graph.get_graph(xray=True).nodes}
    assert {"assign_roles", "opinion", "synthesise", "vote", "tally", "revise"} <= nodes


def test_the_dev_graph_runs_with_its_bound_context(tmp_path: Path) -> None:
    """The dev server passes no run context; the one make_graph bound is used, and the run reaches a stop rule."""
    model = write_script(tmp_path, votes=[])
    graph = make_graph({"configurable": {"model": model, "format": "structured"}})
    state = asyncio.run(graph.ainvoke({}))
    assert state["stop_reason"] == "consensus"
    assert [r.label for r in state["roles"]] == ["Cardiologist", "Cardiac radiologist", "Infectious disease specialist"]
    assert len(state["opinions"]) == 3 and state["reports"][-1].version == 1
