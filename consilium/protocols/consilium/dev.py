"""Entry point for LangGraph's own dev tools (``langgraph dev``; see langgraph.json).

``make_graph`` builds the consilium graph for a case and model named in the
run's ``configurable`` settings (``case``, ``model``, ``format``), defaulting
to the shipped diagnostic example and the embedded model. Calls made from the
dev server are recorded in a throwaway recorder; use ``consilium simulate``
for traces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from consilium.cases import load_case
from consilium.graphs.running import bind_context
from consilium.models import CallRecorder, for_run
from consilium.models.factory import ModelOptions, build_model
from consilium.protocols.consilium.config import ConsiliumConfig
from consilium.protocols.consilium.graph import ConsiliumContext, consilium_graph

__all__ = ["DEFAULT_CASE", "make_graph"]

DEFAULT_CASE = Path(__file__).resolve().parents[3] / "examples" / "cases" / "diagnostic-myocarditis.yaml"


def make_graph(config: RunnableConfig) -> Any:
    settings = (config or {}).get("configurable", {})
    case = load_case(settings.get("case", DEFAULT_CASE))
    base = build_model(settings.get("model", "embedded"), ModelOptions.from_env())
    model = for_run(base, CallRecorder())
    ctx = ConsiliumContext(panel_model=model, moderator_model=model, case_text=case.render(),
                           format=settings.get("format", "structured"), config=ConsiliumConfig())
    return bind_context(consilium_graph(), ctx)
