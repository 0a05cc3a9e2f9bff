"""A cohort's calls, tokens and dollars estimated before it runs, as ``consilium cohort --estimate`` prints
them (docs/cohorts.md, "Estimating a cohort"): the same plan a run would make, and no model built or
called, nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from consilium.api.cohorts import study_keywords, with_spec_keywords
from consilium.api.sync import sync_twin
from consilium.cohort.estimate import CohortEstimate
from consilium.cohort.estimate_plan import estimate_study

__all__ = ["aestimate_cohort", "estimate_cohort"]


async def aestimate_cohort(cases: str | Path | None = None, *, experiment: str | Path | None = None,
                           like: str | Path | None = None, **study: Any) -> CohortEstimate:
    """The estimate of the cohort :func:`~consilium.api.arun_cohort` would run with these keywords (the study
    spec's fields): its rows (one per stage of the panel and per rubric, each protocol variant), their totals
    (``CohortEstimate.total(part)``), from the previous cohort ``like`` (``--like``) when given, else from the
    protocols' bounds; ``judge_decoding`` sets the judges' repair bound as the run's. A bad keyword is a
    :class:`~consilium.errors.UserError` naming its flag."""
    spec = study_keywords(cases, study)
    return await asyncio.to_thread(estimate_study, spec, Path(experiment) if experiment is not None else None,
                                   Path(like) if like is not None else None)


with_spec_keywords(aestimate_cohort)
estimate_cohort = sync_twin(aestimate_cohort)
