"""Single mode and the Specialist Turn as LangGraph graphs, each one node (opentumorboard.txt App. B.1, B.2).

single mode:       START ─► write_board ─► END   (the whole meeting in one call, repaired at most max_repairs times)
Specialist Turn:   START ─► answer ─► END        (one specialist answers one question)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from consilium.graphs.board import agents as board
from consilium.graphs.board.agents import BoardCall
from consilium.graphs.board.state import SingleState, TurnState

__all__ = ["TurnContext", "single_graph", "turn_graph"]


@dataclass(frozen=True)
class TurnContext:
    call: BoardCall
    role: str
    question: str
    #: Keep an answer that breaks consilium's answer schema (``schema_failure: record``).
    keep_malformed: bool = False


async def write_board(state: SingleState, runtime: Runtime[BoardCall]) -> SingleState:
    transcript, valid = await board.write_single_board(runtime.context)
    return {"transcript": transcript, "valid": valid}


async def answer(state: TurnState, runtime: Runtime[TurnContext]) -> TurnState:
    ctx = runtime.context
    reply = await board.answer_turn(ctx.call, ctx.role, ctx.question, keep_malformed=ctx.keep_malformed)
    return {"answer": reply.answer, "schema_failure": reply.schema_failure}


@cache
def single_graph() -> CompiledStateGraph[Any, BoardCall, Any, Any]:
    graph = StateGraph(SingleState, context_schema=BoardCall)
    graph.add_node("write_board", write_board)
    graph.add_edge(START, "write_board")
    graph.add_edge("write_board", END)
    return graph.compile(name="board[single]")


@cache
def turn_graph() -> CompiledStateGraph[Any, TurnContext, Any, Any]:
    graph = StateGraph(TurnState, context_schema=TurnContext)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(name="specialist_turn")
