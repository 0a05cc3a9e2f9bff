"""The study spec: one typed description of a cohort study, and the manifest that records it."""
