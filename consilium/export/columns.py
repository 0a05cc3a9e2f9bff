"""The columns of the exported tables: name, type and meaning, one place for the writers and the docs.

Types are named as Arrow names them (``string``, ``int64``, ``float64``, ``bool``); every column may be
null, and its type never depends on the values (an empty table, or a column of nulls, has the same
schema). docs/export.md lists the same columns; tests/export/test_export.py checks that it does.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["ARMS", "CALLS", "JUDGEMENTS", "TABLES", "Column", "ColumnType"]

ColumnType = Literal["string", "int64", "float64", "bool"]


class Column(NamedTuple):
    name: str
    type: ColumnType
    meaning: str


_KEY = (
    Column("run_id", "string", "the run folder's run id (the cohort's or the simulate run's)"),
    Column("case_id", "string", "the case's id"),
    Column("protocol", "string", "consilium, single, board, turn, or a plugin's"),
    Column("model_spec", "string", "the panel model's spec as the run was given it (null when its traces did not "
                                   "record one: a simulate run's)"),
    Column("format", "string", "the variant as arms.csv names it: free-form, structured, single-free-form, "
                               "board-agents, …"),
    Column("replicate", "int64", "the arm's replicate, when the cohort ran replicates; null otherwise"),
)

ARMS: tuple[Column, ...] = (
    *_KEY,
    Column("model", "string", "the panel model's id (as the trace records it)"),
    Column("moderator_model", "string", "the moderator's model id, when the protocol has a moderator"),
    Column("variant", "string", "the variant as the protocol names it (free-form, structured, agents, single, turn)"),
    Column("seed", "int64", "the run's sampling seed"),
    Column("status", "string", "completed or failed"),
    Column("stop_reason", "string", "why the deliberation stopped (consensus, no_change, round_limit, a board's "
                                    "stop); null for a failed arm"),
    Column("rounds", "int64", "review rounds (a consilium); null for a protocol without rounds"),
    Column("turns", "int64", "meeting turns (a board); null for a protocol without turns"),
    Column("calls", "int64", "model calls recorded in the trace (repair attempts and cache hits included)"),
    Column("failed_calls", "int64", "recorded calls whose answer was not used (invalid, empty or cut off)"),
    Column("cache_hits", "int64", "calls answered from the response cache"),
    Column("input_tokens", "int64", "prompt tokens of every call, as generated (usage.total)"),
    Column("output_tokens", "int64", "completion tokens of every call, as generated"),
    Column("cached_tokens", "int64", "prompt tokens the server served from its prefix cache"),
    Column("reasoning_tokens", "int64", "the part of output_tokens a reasoning model spent thinking"),
    Column("spent_input_tokens", "int64", "prompt tokens this run spent (response-cache hits left out)"),
    Column("spent_output_tokens", "int64", "completion tokens this run spent"),
    Column("estimated", "bool", "true when some counts were computed locally with tiktoken"),
    Column("wall_s", "float64", "wall-clock seconds of the run"),
    Column("started_at", "string", "ISO 8601 start time of the run, UTC"),
    Column("failed_stage", "string", "the stage a failed run stopped at"),
    Column("error", "string", "a failed run's error, \"<ErrorType>: <message>\""),
    Column("answer", "string", "the final answer judged as the conclusion (a consilium's final report, a "
                               "board's conclusion, a turn's answer); null when there is none"),
    Column("reference", "string", "the case's reference conclusion, else its reference diagnosis"),
    Column("trace", "string", "the trace file, relative to the run folder; null when the arm left none"),
)

CALLS: tuple[Column, ...] = (
    *_KEY,
    Column("source", "string", "run (a call of the arm's run) or judge (a call of its judgement)"),
    Column("rubric", "string", "the rubric a judge call scored for; null for a run's call"),
    Column("index", "int64", "the call's position in its trace or judgement record"),
    Column("stage", "string", "role_assignment, opinion, synthesis, vote, revision, board_turn, conclusion, "
                              "specialist_turn, judge, …"),
    Column("role", "string", "the role id, moderator, or a judge call's component:criterion"),
    Column("round", "int64", "the review round (votes and revisions); null otherwise"),
    Column("model", "string", "the model name in the response"),
    Column("schema_name", "string", "the requested output schema; null for plain text"),
    Column("input_tokens", "int64", "prompt tokens"),
    Column("output_tokens", "int64", "completion tokens"),
    Column("cached_tokens", "int64", "prompt tokens served from the server's prefix cache"),
    Column("reasoning_tokens", "int64", "the part of output_tokens spent thinking"),
    Column("estimated", "bool", "true when the counts were computed locally with tiktoken"),
    Column("latency_ms", "float64", "backend latency in milliseconds (0 for scripted, replayed and cached calls)"),
    Column("cached", "bool", "true for a response served from the response cache"),
    Column("finish_reason", "string", "as the backend reported it (stop, length, …)"),
    Column("status", "string", "ok, or error when the answer was not used (see error)"),
    Column("error", "string", "why the answer was not used (the repair message sent back); null when ok"),
    Column("started_at", "float64", "Unix time (seconds) the call started"),
    Column("request_hash", "string", "SHA-256 of the request (replay matches on it)"),
)

JUDGEMENTS: tuple[Column, ...] = (
    *_KEY,
    Column("model", "string", "the panel model's id"),
    Column("rubric", "string", "the rubric's name"),
    Column("rubric_version", "int64", "the rubric's version"),
    Column("judge_model", "string", "the judge model, as its judgement record names it"),
    Column("component", "string", "what was scored: conclusion, differential, role_opinion, answer, …"),
    Column("criterion", "string", "the criterion's id (* when the trace had nothing to score)"),
    Column("score", "float64", "the judge's score; null when not evaluable"),
    Column("calibrated_score", "float64", "after isotonic calibration, when applied; null otherwise"),
    Column("scale_min", "float64", "the lowest score of the rubric's scale (a shipped rubric; −1, out of scope, "
                                   "is no score); null otherwise"),
    Column("scale_max", "float64", "the highest score of the rubric's scale"),
    Column("in_scope", "bool", "false for a decision out of scope (the four-decision rubric's −1): no score, "
                               "its score is then null"),
    Column("evaluable", "bool", "false when the item is not evaluable (its score is then null, never 0)"),
    Column("not_evaluable_reason", "string", "why the item is not evaluable; null when evaluable"),
    Column("rationale_chars", "int64", "characters of the judge's rationale (0 when none)"),
    Column("flags", "string", "the item's flags as a JSON object (critical_error, unsupported_claim, …)"),
    Column("whole_case", "bool", "true for a whole-case criterion (judged on the whole deliberation record)"),
    Column("judgement", "string", "the judgement record, relative to the run folder"),
)

#: Table name → its columns, in the order the files are written.
TABLES: dict[str, tuple[Column, ...]] = {"arms": ARMS, "calls": CALLS, "judgements": JUDGEMENTS}
