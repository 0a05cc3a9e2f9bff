"""The single-specialist baseline: the primary role alone answers the case (MedAgentBoard's question: does
deliberation help at all?). Its one registry line is in consilium/graphs/registry.py."""
