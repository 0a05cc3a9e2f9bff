"""Deliberation networks (``consilium analyze``, docs/networks.md): each consilium arm's deliberation graph,
each board meeting's turn-taking graph, the cohort's role co-assignment network, and the per-category
influence, persistence and conformity read from them."""
