"""Shared test helpers: scripted panels, cohort fixtures, local servers, bad-input corpora."""
