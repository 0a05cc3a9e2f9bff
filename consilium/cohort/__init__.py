"""Cohort experiments: many cases × models × formats, streamed to disk, resumable."""
