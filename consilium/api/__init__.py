"""consilium as a library, for scripts and notebooks (docs/api.md): a protocol on a case, a Specialist Turn,
a trace judged and replayed (consilium/api/runs.py); a cohort run and a run folder judged
(consilium/api/cohorts.py); a cohort's calls, tokens and dollars estimated before it runs
(consilium/api/estimates.py); a cohort compared and reported (consilium/api/reports.py).

Every function returns the record objects the CLI writes. Each ``a…`` coroutine has a plain twin that also
works where an event loop is already running (Jupyter).
"""

from __future__ import annotations

from consilium.api.cohorts import CohortResult, ajudge_run, arun_cohort, judge_run, run_cohort
from consilium.api.estimates import aestimate_cohort, estimate_cohort
from consilium.api.reports import Compared, acompare, areport, compare, report
from consilium.api.runs import (
    ReplayResult,
    ajudge,
    areplay,
    arun,
    aturn,
    judge,
    load_case,
    read_trace,
    replay,
    run,
    turn,
)

__all__ = ["CohortResult", "Compared", "ReplayResult", "acompare", "aestimate_cohort", "ajudge", "ajudge_run",
           "areplay", "areport", "arun", "arun_cohort", "aturn", "compare", "estimate_cohort", "judge", "judge_run",
           "load_case", "read_trace", "replay", "report", "run", "run_cohort", "turn"]
