"""The board meeting, agents mode.

assign_roles ─► moderator ─┬─ ask ──► specialist ─► moderator …
                           ├─ close (≥ 2 specialists have spoken) ─► conclude
                           └─ no room for another question and answer (turn limit) ─► conclude
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from consilium.agents import board, moderator
from consilium.agents.board import MODERATOR, BoardCall
from consilium.board.transcript import Turn
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.state import BoardState, Floor

__all__ = ["RECURSION_LIMIT", "BoardContext", "board_graph"]

RECURSION_LIMIT = 400


@dataclass(frozen=True)
class BoardContext:
    moderator_call: BoardCall
    specialist_call: BoardCall
    conclusion_call: BoardCall
    assignment_call: BoardCall
    config: BoardConfig


async def assign_roles(state: BoardState, runtime: Runtime[BoardContext]) -> dict[str, Any]:
    if state.get("roles"):
        return {}
    call, cfg = runtime.context.assignment_call, runtime.context.config
    roles = await moderator.assign_roles(call.model, call.case_text, min_roles=cfg.min_roles,
                                         max_roles=cfg.max_roles, settings=call.settings,
                                         preamble="board_preamble")
    return {"roles": roles}


async def moderate(state: BoardState, runtime: Runtime[BoardContext]) -> dict[str, Any]:
    turns = state.get("turns", [])
    if len(turns) + 2 > runtime.context.config.max_turns and turns:
        return {"stop_reason": "turn_limit", "floor": None}
    spoken = {t.role for t in turns if t.role != MODERATOR}
    action, speaker, message = await board.moderator_turn(runtime.context.moderator_call, state["roles"], turns,
                                                          may_close=len(spoken) >= 2)
    number = len(turns) + 1
    if action == "close":
        return {"turns": [Turn(number=number, role=MODERATOR, text=message)], "stop_reason": "moderator_closed",
                "floor": None}
    return {"turns": [Turn(number=number, role=MODERATOR, text=message, addressed_to=speaker.label)],
            "floor": Floor(role=speaker, question=message)}


async def speak(state: BoardState, runtime: Runtime[BoardContext]) -> dict[str, Any]:
    floor = state["floor"]
    assert floor is not None
    turns = state.get("turns", [])
    text = await board.specialist_speaks(runtime.context.specialist_call, state["roles"], floor["role"], turns,
                                         floor["question"])
    update: dict[str, Any] = {"turns": [Turn(number=len(turns) + 1, role=floor["role"].label, text=text)],
                              "floor": None}
    if len(turns) + 1 >= runtime.context.config.max_turns:
        update["stop_reason"] = "turn_limit"
    return update


async def conclude(state: BoardState, runtime: Runtime[BoardContext]) -> dict[str, Any]:
    conclusion = await board.write_conclusion(runtime.context.conclusion_call, state["roles"],
                                              state.get("turns", []))
    return {"conclusion": conclusion}


async def after_moderator(state: BoardState) -> str:
    return "conclude" if state.get("stop_reason") else "speak"


async def after_speaker(state: BoardState) -> str:
    return "conclude" if state.get("stop_reason") else "moderate"


@cache
def board_graph() -> CompiledStateGraph[Any, BoardContext, Any, Any]:
    """The compiled meeting graph, built once per process; each run passes its :class:`BoardContext`."""
    graph = StateGraph(BoardState, context_schema=BoardContext)
    graph.add_node("assign_roles", assign_roles)
    graph.add_node("moderate", moderate)
    graph.add_node("speak", speak)
    graph.add_node("conclude", conclude)
    graph.add_edge(START, "assign_roles")
    graph.add_edge("assign_roles", "moderate")
    graph.add_conditional_edges("moderate", after_moderator, ["speak", "conclude"])
    graph.add_conditional_edges("speak", after_speaker, ["moderate", "conclude"])
    graph.add_edge("conclude", END)
    return graph.compile(name="board[agents]")
