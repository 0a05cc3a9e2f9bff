"""consilium as a library, for scripts and notebooks (docs/api.md): a protocol on a case, a Specialist Turn,
a trace judged and replayed (consilium/api/runs.py); a cohort run and a run folder judged
(consilium/api/cohorts.py); a cohort's calls, tokens and dollars estimated before it runs
(consilium/api/estimates.py); a cohort compared (consilium/api/comparison.py) and reported
(consilium/api/reports.py); and each other command of the CLI, which parses its flags into the options
named here and calls the function.

Every function is an ``a…`` coroutine with a plain twin made by :func:`consilium.api.sync.sync_twin` (same
signature; it also works where an event loop is already running, as in Jupyter). The names are loaded on first
use, so importing one module of the API (as each command does) does not import the others.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name → the module of consilium/api/ that defines it.
WHERE = {
    "runs": ["ReplayResult", "ajudge", "areplay", "arun", "aturn", "judge", "load_case", "read_trace", "replay", "run",
             "turn"],
    "cohorts": ["CohortResult", "ajudge_run", "arun_cohort", "judge_run", "run_cohort"],
    "estimates": ["aestimate_cohort", "estimate_cohort"],
    "comparison": ["CompareOptions", "Compared", "acompare", "compare"],
    "reports": ["ReportOptions", "Reported", "areport", "report"],
    "folders": ["ExportOptions", "Exported", "JuryOptions", "JuryReport", "MergeOptions", "Merged", "ViewOptions",
                "Viewed", "aexport", "ajury", "amerge_shards", "aschema", "aview", "export", "jury", "merge_shards",
                "schema", "schemas", "view"],
    "networks": ["AnalyzeOptions", "Analyzed", "aanalyze", "analyze"],
    "casefiles": ["CaseCheck", "ImportOptions", "aimport_agentclinic", "aimport_table", "avalidate_cases",
                  "import_agentclinic", "import_table", "validate_cases"],
    "replays": ["ReplayOptions", "Replayed", "ReplayedTraces", "areplay_traces", "replay_traces"],
    "judging": ["JudgeOptions", "JudgedFolder", "JudgedTrace", "ajudge_folder", "judge_folder"],
    "modelcheck": ["CheckOptions", "ModelCheck", "acheck_model", "check_model"],
    "meetings": ["Meeting", "MeetingOptions", "aboard_meeting", "aspecialist_turn", "board_meeting", "specialist_turn"],
    "ablating": ["AblateOptions", "Ablated", "aablate", "ablate"],
    "evolving": ["EvolveOptions", "Evolved", "aevolve", "evolve", "table5_csv"],
    "serving": ["Running", "ServeOptions", "aserve", "running_studio", "serve"],
    "calibrating": ["Agreement", "AgreementOptions", "Isotonic", "IsotonicOptions", "aagreement", "agreement",
                    "aisotonic", "isotonic"],
    "studies": ["CreateStudyOptions", "StudyExported", "StudyStatus", "acreate_study", "aexport_study",
                "anew_admin_link", "anew_rater_link", "arevoke_rater", "astudy_status", "create_study", "export_study",
                "new_admin_link", "new_rater_link", "revoke_rater", "study_status"],
}
_MODULE = {name: module for module, names in WHERE.items() for name in names}

__all__ = sorted(_MODULE)


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module 'consilium.api' has no attribute {name!r}")
    return getattr(importlib.import_module(f"consilium.api.{module}"), name)
