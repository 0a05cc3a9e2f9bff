"""The command table, as data: each subcommand's module (``consilium/cli/<module>.py``, with ``register`` and
``run``) and its one-line help, one row per command, in the order ``consilium --help`` lists them.
``consilium --help`` lists the commands from here alone, importing none of their modules; each module's
``register`` takes its line from here, so the two never differ."""

from __future__ import annotations

__all__ = ["COMMANDS", "SUMMARIES"]

#: name: (module, one-line help)
_TABLE = {
    "simulate": ("simulate_cmd", "run a consilium on a case and write its traces"),
    "cohort": ("cohort_cmd", "run protocols on every case × model × variant, optionally judged"),
    "compare": ("compare_cmd", "compare free-form and structured arms of a cohort"),
    "report": ("report_cmd", "summary tables and plots of a cohort (consilium or board), or of a folder of cohorts"),
    "board": ("board_cmd", "simulate a tumor-board meeting on a case and write its trace"),
    "turn": ("board_cmd", "answer one tumor-board question as a named specialist"),
    "replay": ("replay_cmd", "re-run a trace from its recorded calls and compare"),
    "judge": ("judge_cmd", "score traces with a rubric judge"),
    "jury": ("jury_cmd", "agreement, self-preference and length bias of a jury of judges"),
    "calibrate": ("calibrate_cmd", "compare judges with physician ratings and calibrate them"),
    "cases": ("cases_cmd", "validate case files; import case collections"),
    "models": ("models_cmd", "inspect and check model backends"),
    "schema": ("schema_cmd", "print the JSON schema of a file format"),
    "view": ("view_cmd", "write a static HTML view of a run or a trace"),
    "export": ("export_cmd", "export a run folder as Inspect AI logs or JSONL / Parquet tables"),
    "analyze": ("analyze_cmd", "deliberation networks of a run or cohort: graphs (GraphML, "
                                "PNG), influence, persistence, conformity"),
    "ablate": ("ablate_cmd", "re-run a cohort's arms with one thing changed and compare, paired"),
    "otb": ("otb_cmd", "OpenTumorBoard's own scores (format score, conclusion, ROUGE-L)"),
    "serve": ("serve_cmd", "a local web studio: browse cohorts, rate outputs blinded, take a seat"),
    "study": ("study_cmd", "blinded physician rating studies of a run's outputs"),
}

#: Each subcommand's module by the names it registers (``turn`` is the board's module's second name).
COMMANDS = {name: module for name, (module, _) in _TABLE.items()}
#: Each subcommand's one-line help, in ``consilium --help`` and on its own parser.
SUMMARIES = {name: summary for name, (_, summary) in _TABLE.items()}
