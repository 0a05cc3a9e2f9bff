"""The command table, as data: each subcommand's module (``consilium/cli/<module>.py``, with ``register`` and
``run``) and its one-line help. ``consilium --help`` lists the commands from here alone, importing none of
their modules; each module's ``register`` takes its line from here, so the two never differ."""

from __future__ import annotations

__all__ = ["COMMANDS", "SUMMARIES"]

#: Each subcommand's module (``consilium/cli/<module>.py``, with ``register`` and ``run``) by the names it
#: registers, in the order ``consilium --help`` lists them.
COMMANDS = {"simulate": "simulate_cmd", "cohort": "cohort_cmd", "compare": "compare_cmd", "report": "report_cmd",
            "board": "board_cmd", "turn": "board_cmd", "replay": "replay_cmd", "judge": "judge_cmd",
            "jury": "jury_cmd", "calibrate": "calibrate_cmd", "cases": "cases_cmd", "models": "models_cmd",
            "schema": "schema_cmd", "view": "view_cmd", "export": "export_cmd", "analyze": "analyze_cmd",
            "ablate": "ablate_cmd", "otb": "otb_cmd", "serve": "serve_cmd",
            "study": "study_cmd"}

#: Each subcommand's one-line help, in ``consilium --help`` and on its own parser.
SUMMARIES = {
    "simulate": "run a consilium on a case and write its traces",
    "cohort": "run protocols on every case × model × variant, optionally judged",
    "compare": "compare free-form and structured arms of a cohort",
    "report": "summary tables and plots of a cohort (consilium or board), or of a folder of cohorts",
    "board": "simulate a tumor-board meeting on a case and write its trace",
    "turn": "answer one tumor-board question as a named specialist",
    "replay": "re-run a trace from its recorded calls and compare",
    "judge": "score traces with a rubric judge",
    "jury": "agreement, self-preference and length bias of a jury of judges",
    "calibrate": "compare judges with physician ratings and calibrate them",
    "cases": "validate case files; import case collections",
    "models": "inspect and check model backends",
    "schema": "print the JSON schema of a file format",
    "view": "write a static HTML view of a run or a trace",
    "export": "export a run folder as Inspect AI logs or JSONL / Parquet tables",
    "analyze": "deliberation networks of a run or cohort: graphs (GraphML, PNG), influence, persistence, "
               "conformity",
    "ablate": "re-run a cohort's arms with one thing changed and compare, paired",
    "otb": "OpenTumorBoard's own scores (format score, conclusion, ROUGE-L)",
    "serve": "a local web studio: browse cohorts, rate outputs blinded, take a seat",
    "study": "blinded physician rating studies of a run's outputs",
}
