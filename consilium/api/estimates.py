"""A cohort's calls, tokens and dollars estimated before it runs, as ``consilium cohort --estimate`` prints
them (docs/cohorts.md, "Estimating a cohort"): the same plan a run would make, and no model built or
called, nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from consilium.api.cohorts import Names, _cohort_flags
from consilium.api.sync import run_sync as _sync
from consilium.cli.cohort_estimate import plan_shape
from consilium.cli.cohort_plan import new_plan
from consilium.cohort.estimate import CohortEstimate, estimate
from consilium.cohort.estimate_like import read_prior
from consilium.judges.answers import Scope
from consilium.judges.decoding import JudgeDecoding

__all__ = ["aestimate_cohort", "estimate_cohort"]


def _estimated(cases: str | Path | None, like: str | Path | None, **flags: Any) -> CohortEstimate:
    args = _cohort_flags(cases, wall_limit=None, out=None, concurrency=None, resume=None, temperature=None, **flags)
    plan = new_plan(args)
    return estimate(plan_shape(plan), read_prior(Path(like)) if like is not None else None)


async def aestimate_cohort(cases: str | Path | None = None, *, models: Names | None = None,
                           moderator: str | None = None, protocols: Names | None = None,
                           formats: Names | None = None, modes: Names | None = None,
                           config: str | Path | None = None, seed: int | None = None, max_rounds: int | None = None,
                           role_labels: str | None = None, judges: Names | None = None,
                           judge_model: Names | None = None, scope: Scope | None = None,
                           experiment: str | Path | None = None, limit: int | None = None,
                           sample: int | None = None, allow_missing_reference: bool = False,
                           judge_decoding: JudgeDecoding | None = None,
                           like: str | Path | None = None) -> CohortEstimate:
    """The estimate of the cohort :func:`~consilium.api.arun_cohort` would run with these arguments: its
    rows (one per stage of the panel and per rubric, each protocol variant), their totals
    (``CohortEstimate.total(part)``), from the previous cohort ``like`` (``--like``) when given, else from the
    protocols' bounds; ``judge_decoding`` (``--judge-decoding``) sets the judges' repair bound as the run's.
    A bad argument is a :class:`~consilium.errors.UserError` naming its flag."""
    return await asyncio.to_thread(
        _estimated, cases, like, models=models, moderator=moderator, protocols=protocols, formats=formats,
        modes=modes, config=config, seed=seed, max_rounds=max_rounds, role_labels=role_labels, judges=judges,
        judge_model=judge_model, scope=scope, experiment=experiment, limit=limit, sample=sample,
        allow_missing_reference=allow_missing_reference, judge_decoding=judge_decoding)


def estimate_cohort(cases: str | Path | None = None, *, models: Names | None = None, moderator: str | None = None,
                    protocols: Names | None = None, formats: Names | None = None, modes: Names | None = None,
                    config: str | Path | None = None, seed: int | None = None, max_rounds: int | None = None,
                    role_labels: str | None = None, judges: Names | None = None, judge_model: Names | None = None,
                    scope: Scope | None = None, experiment: str | Path | None = None, limit: int | None = None,
                    sample: int | None = None, allow_missing_reference: bool = False,
                    judge_decoding: JudgeDecoding | None = None, like: str | Path | None = None) -> CohortEstimate:
    """:func:`aestimate_cohort`, from plain code or a notebook."""
    return _sync(aestimate_cohort(cases, models=models, moderator=moderator, protocols=protocols, formats=formats,
                                  modes=modes, config=config, seed=seed, max_rounds=max_rounds,
                                  role_labels=role_labels, judges=judges, judge_model=judge_model, scope=scope,
                                  experiment=experiment, limit=limit, sample=sample,
                                  allow_missing_reference=allow_missing_reference, judge_decoding=judge_decoding,
                                  like=like))
