"""What the consilium and board graphs share at run time.

Each graph is compiled once per process; a run passes its context (models,
case text, settings) as LangGraph's run context. Every node and router is a
coroutine: LangGraph runs a plain function in a worker thread, and that hop
cost more than the function itself. ``bind_context`` fixes a
context on the graph for LangGraph's dev server, which cannot send Python
objects as a run's context.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

__all__ = ["Latest", "bind_context", "stream_states"]


async def stream_states(graph: CompiledStateGraph[Any, Any, Any, Any], state: dict[str, Any], context: Any, *,
                        recursion_limit: int) -> AsyncIterator[dict[str, Any]]:
    """The whole state after each step, so a run that fails part-way still shows how far it got."""
    async for values in graph.astream(state, config={"recursion_limit": recursion_limit}, context=context,
                                      stream_mode="values"):
        yield values


class Latest:
    """The last whole state a graph streamed, kept step by step, so that a run stopped part-way (a failed call,
    the wall clock) still shows how far it got."""

    def __init__(self, initial: dict[str, Any] | None = None) -> None:
        self.values: dict[str, Any] = dict(initial or {})

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    async def follow(self, graph: CompiledStateGraph[Any, Any, Any, Any], context: Any, *, recursion_limit: int,
                     on_step: Callable[[dict[str, Any], dict[str, Any]], None] | None = None) -> None:
        """Run ``graph`` from the kept state; ``on_step(before, after)`` hears of each step."""
        async for values in stream_states(graph, self.values, context, recursion_limit=recursion_limit):
            if on_step is not None:
                on_step(self.values, values)
            self.values = values


def bind_context(graph: CompiledStateGraph[Any, Any, Any, Any], context: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A copy of the graph whose runs use ``context`` (LangGraph adopts a runtime seeded in the config,
    the path its server's graph factories take)."""
    return graph.with_config(configurable={CONFIG_KEY_RUNTIME: Runtime(context=context)})
