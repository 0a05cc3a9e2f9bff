"""GraphML text of ``consilium analyze``'s graphs, valid XML whatever the traces hold.

A role label, a change summary or a reason is model or user text and may hold characters XML 1.0 forbids
(control characters other than tab, newline and carriage return; lone surrogates; U+FFFE, U+FFFF).
networkx writes them as they are, and networkx's own reader and Gephi then refuse the file. Every string
of the graph (node ids, edge keys, attribute names and values) goes through :func:`xml_safe` here, once,
before writing: a forbidden character becomes its Python escape (``\\x07``), so the text stays readable and
two labels that differ only there stay apart.
"""

from __future__ import annotations

import re
from typing import Any

import networkx as nx
from networkx.readwrite.graphml import GraphMLWriter

__all__ = ["graphml_text", "xml_safe"]

#: What XML 1.0 does not allow in a document (https://www.w3.org/TR/xml/#charsets, production [2] Char).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` with each character XML 1.0 forbids replaced by its escape (``\\x1b``, ``\\ud800``)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _safe(value: Any) -> Any:
    return xml_safe(value) if isinstance(value, str) else value


def _safe_attributes(data: dict[Any, Any]) -> dict[Any, Any]:
    return {_safe(k): _safe(v) for k, v in data.items()}


def _safe_graph(graph: nx.Graph) -> nx.Graph:
    """A copy of ``graph`` whose every string is :func:`xml_safe`."""
    copy = graph.__class__()
    copy.graph.update(_safe_attributes(graph.graph))
    copy.add_nodes_from((_safe(n), _safe_attributes(d)) for n, d in graph.nodes(data=True))
    if graph.is_multigraph():
        copy.add_edges_from((_safe(u), _safe(v), _safe(k), _safe_attributes(d))
                            for u, v, k, d in graph.edges(keys=True, data=True))
    else:
        copy.add_edges_from((_safe(u), _safe(v), _safe_attributes(d)) for u, v, d in graph.edges(data=True))
    return copy


class _GraphMLWriter(GraphMLWriter):  # type: ignore[misc]  # networkx ships no types
    """networkx's writer with GraphML's (XML Schema's) booleans, ``true`` / ``false``: networkx writes Python's
    ``True`` / ``False``, which its own reader takes but a strict reader need not."""

    def add_data(self, name: str, element_type: type, value: str, scope: str = "all", default: Any = None) -> Any:
        element = super().add_data(name, element_type, value, scope, default)
        if element_type is bool:
            element.text = value.lower()
        return element


def graphml_text(graph: nx.Graph) -> str:
    """The graph as GraphML text (written atomically by the caller): every string XML-safe
    (:func:`xml_safe`); edge ids are the edge keys, unique in each graph (Gephi refuses repeated ids);
    booleans are ``true`` / ``false``."""
    writer = _GraphMLWriter(encoding="utf-8", prettyprint=True)
    writer.add_graph_element(_safe_graph(graph))
    return str(writer).rstrip("\n") + "\n"
