"""Every protocol graph's input and output schemas render on Python 3.11, as LangGraph's tools (``langgraph dev``,
Studio) read them: the state types are ``typing_extensions.TypedDict`` (pydantic refuses ``typing.TypedDict``
before 3.12)."""

from __future__ import annotations

import pytest

from consilium.graphs.board.calls import single_graph as board_single_graph
from consilium.graphs.board.calls import turn_graph
from consilium.graphs.board.graph import board_graph
from consilium.graphs.consilium.graph import consilium_graph
from consilium.graphs.single.graph import single_graph

GRAPHS = {"consilium": (consilium_graph, {"roles", "opinions", "reports", "rounds", "stop_reason"}),
          "board[agents]": (board_graph, {"roles", "turns", "conclusion", "stop_reason"}),
          "board[single]": (board_single_graph, {"transcript", "valid"}),
          "specialist_turn": (turn_graph, {"answer"}),
          "single": (single_graph, {"roles", "answer"})}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_a_graphs_schemas_render(name: str) -> None:
    build, fields = GRAPHS[name]
    graph = build()
    assert graph.name == name
    assert fields <= set(graph.get_input_jsonschema()["properties"])
    assert fields <= set(graph.get_output_jsonschema()["properties"])
