"""Every protocol's graph for LangGraph's dev server and Studio (``langgraph dev``; langgraph.json; docs/studio.md).

One entry for all: each protocol whose declaration has a Studio graph (``Protocol.studio``), built in or added by
a plugin, gets a factory here under its own name, the name langgraph.json gives it
(``"consilium": "./consilium/graphs/dev.py:consilium"``); :func:`make_graph` is the same by name. A factory
returns the protocol's dev graph at once (no I/O: the server calls it on its event loop for every run); each run
reads its settings from ``configurable`` (the model specs, the case as a path or inline, the protocol's variant
and run settings), runs the case as the CLI does and returns the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from consilium.errors import UserError
from consilium.graphs.registry import get_protocol, protocols
from consilium.graphs.studio import StudioSpec, studio_graph

__all__ = ["Factory", "compiled", "factory", "make_graph", "studio_protocols", "with_defaults"]

Graph = CompiledStateGraph[Any, Any, Any, Any]
#: What langgraph.json names: the run's config in, the protocol's dev graph out.
Factory = Callable[[RunnableConfig], Graph]


def _spec(name: str) -> StudioSpec:
    spec = get_protocol(name).studio()
    if spec is None:
        raise UserError(f"protocol {name!r} declares no Studio graph (Protocol.studio)")
    return spec


@cache
def compiled(name: str) -> Graph:
    """The protocol's compiled dev graph, built once per process."""
    protocol = get_protocol(name)  # its trace's file named as simulate names it
    return studio_graph(name, _spec(name), lambda trace: protocol.arm_variant(protocol.variant(trace)))


def with_defaults(graph: Graph, schema: type[Any], config: RunnableConfig | None) -> Graph:
    """``graph`` with the documented keys of ``config``'s ``configurable`` as its runs' defaults (a run's own
    ``configurable`` wins); the server's own keys are left out. Nothing is read or loaded."""
    keys = schema.__required_keys__ | schema.__optional_keys__
    defaults = {k: v for k, v in ((config or {}).get("configurable") or {}).items() if k in keys}
    return graph.with_config(configurable=defaults) if defaults else graph


def make_graph(name: str, config: RunnableConfig | None = None) -> Graph:
    """Protocol ``name``'s dev graph; the documented keys of ``config``'s ``configurable`` become its runs'
    defaults (a run's own ``configurable`` wins). Nothing is read or loaded here: that happens when a run starts."""
    return with_defaults(compiled(name), _spec(name).settings, config)


def factory(name: str) -> Factory:
    """The factory langgraph.json names for protocol ``name``."""

    def make(config: RunnableConfig) -> Graph:
        return make_graph(name, config)

    make.__name__ = make.__qualname__ = f"make_{name.replace('-', '_')}_graph"
    return make


def studio_protocols() -> list[str]:
    """The protocols that declare a Studio graph, in the registry's order."""
    return [name for name, protocol in protocols().items() if protocol.studio() is not None]


# One factory per protocol with a Studio graph, under its name: langgraph-api reads the module's namespace.
globals().update({name: factory(name) for name in studio_protocols()})
