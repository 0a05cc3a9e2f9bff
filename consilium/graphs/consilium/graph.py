"""The consilium state machine.

assign_roles ─► opinion × roles (parallel, isolated) ─► synthesise ─► vote × roles (round r) ─► tally
tally: all accept → consensus; r == max_rounds → round_limit; else revise
revise: no clinically meaningful revision → no_change; else round r + 1 → vote × roles

With a person at the table (``ConsiliumContext.human``), assign_roles seats them and their opinion and votes
are interrupts that a checkpointed run resumes with their answers (seat.py, human_run.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from consilium.agents import moderator, specialist
from consilium.agents.records import AssignedRole, Format, Round
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.seat import human_opinion, human_vote, seat_human
from consilium.graphs.consilium.state import ConsiliumState, OpinionTask, VoteTask
from consilium.models import ChatModel

__all__ = ["RECURSION_LIMIT", "ConsiliumContext", "consilium_graph", "human_graph"]

# Each review round takes three supersteps (vote, tally, revise).
RECURSION_LIMIT = 200


@dataclass(frozen=True)
class ConsiliumContext:
    """What the nodes need besides the state: the models (per named role), the case and the settings."""

    panel_model: ChatModel
    moderator_model: ChatModel
    case_text: str
    format: Format
    config: ConsiliumConfig
    #: The role a person plays (simulate --human); None: every member is a model.
    human: str | None = None


async def assign_roles(state: ConsiliumState, runtime: Runtime[ConsiliumContext]) -> ConsiliumState:
    ctx = runtime.context
    if state.get("roles"):  # shared assignment from the other format
        return _seated(state["roles"], ctx.human) if ctx.human else {}
    # A fixed panel (an ablation's: config.panel) is seated as given, with no call.
    roles = list(ctx.config.panel) if ctx.config.panel else await moderator.assign_panel(
        ctx.moderator_model, ctx.case_text, ctx.config)
    return _seated(roles, ctx.human) if ctx.human else {"roles": roles}


def _seated(roles: list[AssignedRole], requested: str) -> ConsiliumState:
    panel, seat = seat_human(roles, requested)
    return {"roles": panel, "human": seat}


async def opinion(task: OpinionTask, runtime: Runtime[ConsiliumContext]) -> ConsiliumState:
    ctx = runtime.context
    if task.get("human"):
        given, said = human_opinion(task["role"], ctx.case_text, ctx.format, ctx.config.budget_chars("opinion"))
        return {"opinions": [given], "human_inputs": [said]}
    written = await specialist.write_opinion(ctx.panel_model, ctx.case_text, task["role"], ctx.format,
                                             ctx.config.settings("opinion"), ctx.config.budget_chars("opinion"))
    return {"opinions": [written]}


async def synthesise(state: ConsiliumState, runtime: Runtime[ConsiliumContext]) -> ConsiliumState:
    ctx = runtime.context
    report = await moderator.synthesise(ctx.moderator_model, ctx.case_text, state["roles"],
                                        state.get("opinions", []), ctx.format, ctx.config.settings("synthesis"),
                                        ctx.config.budget_chars("synthesis"))
    return {"reports": [report], "round": 1}


async def vote(task: VoteTask, runtime: Runtime[ConsiliumContext]) -> ConsiliumState:
    ctx = runtime.context
    if task.get("human"):
        cast, said = human_vote(task["role"], ctx.case_text, ctx.format, task["report"], task["round"])
        return {"votes": [cast], "human_inputs": [said]}
    cast = await specialist.cast_vote(ctx.panel_model, ctx.case_text, task["role"], task["report"],
                                      task["round"], ctx.config.settings("vote"))
    return {"votes": [cast]}


async def tally(state: ConsiliumState, runtime: Runtime[ConsiliumContext]) -> ConsiliumState:
    r = state["round"]
    order = {role.id: i for i, role in enumerate(state["roles"])}
    votes = sorted((v for v in state.get("votes", []) if v.round == r), key=lambda v: order.get(v.role, 0))
    dissent = sum(v.vote == "dissent" for v in votes)
    record = Round(round=r, report_version=state["reports"][-1].version, votes=votes,
                   dissent_fraction=round(dissent / len(votes), 6) if votes else 0.0)
    update: ConsiliumState = {"rounds": [record]}
    if dissent == 0:
        update["stop_reason"] = "consensus"
    elif r >= runtime.context.config.max_rounds:
        update["stop_reason"] = "round_limit"
    return update


async def revise(state: ConsiliumState, runtime: Runtime[ConsiliumContext]) -> ConsiliumState:
    ctx, r = runtime.context, state["round"]
    report = await moderator.revise(ctx.moderator_model, ctx.case_text, state["roles"], state["reports"][-1],
                                    state["rounds"][-1].votes, r, ctx.format, ctx.config.settings("revision"),
                                    ctx.config.budget_chars("revision"))
    if report is None:
        return {"stop_reason": "no_change"}
    return {"reports": [report], "round": r + 1}


async def fan_out_opinions(state: ConsiliumState) -> list[Send]:
    # The person's seat is marked on its task; a model's task is as it always was.
    return [Send("opinion", OpinionTask(role=role, human=True) if state.get("human") == role.id
                 else OpinionTask(role=role)) for role in state["roles"]]


async def fan_out_votes(state: ConsiliumState, runtime: Runtime[ConsiliumContext]) -> list[Send] | str:
    if state.get("stop_reason") or not runtime.context.config.review:  # review off: the initial report
        return END
    report = state["reports"][-1]
    return [Send("vote", VoteTask(role=role, report=report, round=state["round"], human=True)
                 if state.get("human") == role.id else VoteTask(role=role, report=report, round=state["round"]))
            for role in state["roles"]]


async def after_tally(state: ConsiliumState) -> str:
    return END if state.get("stop_reason") else "revise"


@cache
def consilium_graph() -> CompiledStateGraph[Any, ConsiliumContext, Any, Any]:
    """The compiled graph, built once per process; each run passes its :class:`ConsiliumContext`
    as LangGraph's run context (compiling per run cost several milliseconds per run)."""
    return _graph().compile(name="consilium")


def human_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, ConsiliumContext, Any, Any]:
    """The same graph with a checkpointer, which a run with a person at the table needs: its interrupts pause
    the run, and a paused or interrupted run resumes from its last checkpoint."""
    return _graph().compile(name="consilium", checkpointer=checkpointer)


def _graph() -> StateGraph[ConsiliumState, ConsiliumContext, Any, Any]:
    graph = StateGraph(ConsiliumState, context_schema=ConsiliumContext)
    graph.add_node("assign_roles", assign_roles)
    # Send-target nodes take their task payload, not the graph state; langgraph's stubs cannot express that.
    graph.add_node("opinion", opinion)  # type: ignore[call-overload,arg-type]
    graph.add_node("synthesise", synthesise)
    graph.add_node("vote", vote)  # type: ignore[call-overload,arg-type]
    graph.add_node("tally", tally)
    graph.add_node("revise", revise)
    graph.add_edge(START, "assign_roles")
    graph.add_conditional_edges("assign_roles", fan_out_opinions, ["opinion"])
    graph.add_edge("opinion", "synthesise")
    graph.add_conditional_edges("synthesise", fan_out_votes, ["vote", END])
    graph.add_edge("vote", "tally")
    graph.add_conditional_edges("tally", after_tally, ["revise", END])
    graph.add_conditional_edges("revise", fan_out_votes, ["vote", END])
    return graph
