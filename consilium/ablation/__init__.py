"""Counterfactual ablations of a finished cohort (``consilium ablate``, docs/ablations.md)."""
