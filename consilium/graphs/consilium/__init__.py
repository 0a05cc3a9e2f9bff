"""The AI Consilium protocol as a LangGraph state machine (ai-consilium.txt, Fig. 1–4): config, state, graph,
runner, record type and protocol object."""
