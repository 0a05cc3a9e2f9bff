"""The AI Consilium protocol as a LangGraph state machine (ai-consilium.txt, Fig. 1–4)."""

from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.graph import ConsiliumContext, consilium_graph

__all__ = ["ConsiliumConfig", "ConsiliumContext", "consilium_graph"]
