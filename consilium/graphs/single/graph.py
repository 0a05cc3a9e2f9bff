"""The single-specialist baseline as a LangGraph state machine.

assign_roles (the consilium's own assignment call) ─► answer (the primary role alone) ─► END
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from consilium.agents import moderator
from consilium.agents.prompting import case_messages
from consilium.agents.records import Format, Report, render_sections
from consilium.agents.schemas import REPORT_SECTIONS, free_text_schema, length_prompt, report_schema
from consilium.graphs.single.config import SingleConfig
from consilium.graphs.single.state import SingleState
from consilium.models import CallTag, ChatModel, ModelRequest

__all__ = ["PROMPTS", "SingleContext", "single_graph"]

#: This protocol's prompts are in this package's ``prompts/`` folder.
PROMPTS = "consilium.graphs.single"


@dataclass(frozen=True)
class SingleContext:
    specialist_model: ChatModel
    moderator_model: ChatModel
    case_text: str
    format: Format
    config: SingleConfig


async def assign_roles(state: SingleState, runtime: Runtime[SingleContext]) -> SingleState:
    if state.get("roles"):  # the other format's assignment
        return {}
    ctx = runtime.context
    return {"roles": await moderator.assign_panel(ctx.moderator_model, ctx.case_text, ctx.config)}


async def answer(state: SingleState, runtime: Runtime[SingleContext]) -> SingleState:
    ctx = runtime.context
    primary = next(r for r in state["roles"] if r.primary)
    structured = ctx.format == "structured"
    budget = ctx.config.report_budget_chars
    task, lengths = length_prompt("answer_structured" if structured else "answer_free_form", budget, REPORT_SECTIONS)
    request = ModelRequest(
        messages=case_messages(ctx.case_text, task, package=PROMPTS, preamble_package="consilium.agents",
                               role_label=primary.label, justification=primary.justification, **lengths),
        settings=ctx.config.settings("opinion"),
        schema=report_schema(budget) if structured else free_text_schema("FreeFormAnswer", budget),
        tag=CallTag(stage="opinion", role=primary.id),
    )
    response = await ctx.specialist_model.generate(request)
    if structured:
        sections = {k: str(v) for k, v in response.parsed.items()}
        return {"answer": Report(version=1, round=0, text=render_sections(sections), sections=sections)}
    return {"answer": Report(version=1, round=0, text=response.text.strip())}


@cache
def single_graph() -> CompiledStateGraph[Any, SingleContext, Any, Any]:
    graph = StateGraph(SingleState, context_schema=SingleContext)
    graph.add_node("assign_roles", assign_roles)
    graph.add_node("answer", answer)
    graph.add_edge(START, "assign_roles")
    graph.add_edge("assign_roles", "answer")
    graph.add_edge("answer", END)
    return graph.compile(name="single")
