"""Physician calibration of the judges: ratings, agreement statistics, isotonic calibration, evolution."""
