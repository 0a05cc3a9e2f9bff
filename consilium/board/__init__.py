"""The tumor board (OpenTumorBoard protocol): transcript format, format checks, runs."""
