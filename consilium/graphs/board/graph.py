"""The board meeting, agents mode.

assign_roles ─► moderator ─┬─ ask (a moderator turn) ─────────────► specialist ─► moderator …
                           ├─ pass (no moderator turn; open floor) ─► specialist replies to another's turn
                           ├─ close (≥ 2 specialists have spoken) ─► conclude
                           └─ one turn left (open floor): must close ─► conclude

Open floor: speakers take the floor more than once and a turn may answer the previous turn or
disagree (opentumorboard.txt, App. B.2), so the moderator may let a specialist reply to a colleague
directly, consecutive specialist turns included; the turn limit ends with the moderator's closing turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from consilium.agents import moderator
from consilium.graphs.board import agents as board
from consilium.graphs.board.agents import MODERATOR, BoardCall
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.state import BoardState, Floor
from consilium.graphs.board.transcript import Turn

__all__ = ["RECURSION_LIMIT", "BoardContext", "board_graph"]

RECURSION_LIMIT = 400


@dataclass(frozen=True)
class BoardContext:
    moderator_call: BoardCall
    specialist_call: BoardCall
    conclusion_call: BoardCall
    assignment_call: BoardCall
    config: BoardConfig


async def assign_roles(state: BoardState, runtime: Runtime[BoardContext]) -> BoardState:
    if state.get("roles"):
        return {}
    call = runtime.context.assignment_call  # its settings are the config's role-assignment settings
    return {"roles": await moderator.assign_panel(call.model, call.case_text, runtime.context.config,
                                                  preamble="board_preamble", preamble_package=board.PROMPTS)}


async def moderate(state: BoardState, runtime: Runtime[BoardContext]) -> BoardState:
    turns = state.get("turns", [])
    cfg = runtime.context.config
    left = cfg.max_turns - len(turns)
    if turns and left <= 0:
        return {"stop_reason": "turn_limit", "floor": None}
    spoken = {t.role for t in turns if t.role != MODERATOR}
    must_close = bool(turns) and left == 1  # the last turn is the moderator's closing
    # With two turns left a question would take both (the moderator's and the answer), leaving none for
    # the closing: only a pass (one turn) or the close itself keeps the meeting's end the moderator's.
    may_ask = not (bool(turns) and left == 2)
    move = await board.moderator_turn(runtime.context.moderator_call, state["roles"], turns,
                                      may_close=len(spoken) >= 2, must_close=must_close,
                                      may_pass=bool(spoken), may_ask=may_ask)
    number = len(turns) + 1
    if move.action == "close":
        return {"turns": [Turn(number=number, role=MODERATOR, text=move.message)],
                "stop_reason": "turn_limit" if must_close else "moderator_closed", "floor": None}
    floor = Floor(role=move.speaker, question=move.message, responds_to=move.responds_to,
                  passed=move.action == "pass")
    if move.action == "pass":
        return {"floor": floor}
    return {"turns": [Turn(number=number, role=MODERATOR, text=move.message, addressed_to=move.speaker.label)],
            "floor": floor}


async def speak(state: BoardState, runtime: Runtime[BoardContext]) -> BoardState:
    floor = state["floor"]
    assert floor is not None
    turns = state.get("turns", [])
    text = await board.specialist_speaks(runtime.context.specialist_call, state["roles"], floor["role"], turns,
                                         floor["question"], responds_to=floor["responds_to"],
                                         passed=floor["passed"])
    update: BoardState = {"turns": [Turn(number=len(turns) + 1, role=floor["role"].label, text=text,
                                         floor="passed" if floor["passed"] else "asked",
                                         responds_to=floor["responds_to"])],
                          "floor": None}
    if len(turns) + 1 >= runtime.context.config.max_turns:
        update["stop_reason"] = "turn_limit"
    return update


async def conclude(state: BoardState, runtime: Runtime[BoardContext]) -> BoardState:
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
