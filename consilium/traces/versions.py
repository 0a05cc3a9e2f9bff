"""Reading every record version consilium ever wrote: each older shape is upgraded on read, here only.

A record's ``schema_version`` changes whenever its shape or a field's meaning changes
(docs/traces.md, "Schema version"). Each step below takes a record of one version to the next; reading
applies them in order, so a file from any earlier release reads as today's model and nothing after the
reader asks which version a record was. A version not listed (a newer consilium's) is refused with the
versions this one reads.

Some older runs used a mode this version no longer runs (consilium/traces/retired.py): their records still
read, with the mode they ran; only replaying one is refused, in one line naming its version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from consilium.errors import UserError
from consilium.models import Usage

__all__ = ["JUDGEMENT_STEPS", "TRACE_STEPS", "upgrade"]

Step = Callable[[dict[str, Any]], dict[str, Any]]

#: The stages a 1.0 trace's ``max_tokens`` could name, by protocol: as 1.0 knew them (a step upgrades what
#: was written then, so it must not follow today's stage lists).
_CONSILIUM_STAGES_1_0 = ("role_assignment", "opinion", "synthesis", "vote", "revision")
_BOARD_STAGES_1_0 = ("role_assignment", "board_turn", "board_single", "conclusion", "specialist_turn")


def _trace_1_0(data: dict[str, Any]) -> dict[str, Any]:
    """1.0 → 1.1: ``model_spec`` was not recorded (null: unknown). 1.0 ignored a ``max_tokens`` entry for a
    stage its protocol does not have (a misspelt ``opinon``); 1.1 refuses one, so the upgrade drops it,
    which keeps the settings the run really had."""
    config = data.get("config")
    if isinstance(config, dict) and isinstance(config.get("max_tokens"), dict):
        known = _BOARD_STAGES_1_0 if data.get("kind") in ("board", "turn") else _CONSILIUM_STAGES_1_0
        config = {**config, "max_tokens": {k: v for k, v in config["max_tokens"].items() if k in known}}
        data = {**data, "config": config}
    return {**data, "model_spec": data.get("model_spec"), "schema_version": "1.1"}


def _trace_1_1(data: dict[str, Any]) -> dict[str, Any]:
    """1.1 → 1.2: a board trace's ``validation`` was made by the first version of the format checks
    (``rules: "1"``: no repetition penalty, repairs' tokens counted, looser turn and sentence rules)."""
    validation = data.get("validation")
    if isinstance(validation, dict) and "rules" not in validation:
        data = {**data, "validation": {**validation, "rules": "1"}}
    return {**data, "schema_version": "1.2"}


def _trace_1_2(data: dict[str, Any]) -> dict[str, Any]:
    """1.2 → 1.3: a board meeting in agents mode strictly alternated moderator and specialist (``discussion:
    "alternating"``); 1.3 lets the moderator pass the floor to whoever should speak next (a single-mode meeting
    has no floor: ``open``, as a new one records). A consilium's answers had unequal length caps (``lengths:
    "legacy"``) before 1.3 shared one budget. ``usage.spent`` and ``cache_hits`` are counted from the calls, as
    the ledger counts them (a call answered from the response cache spent nothing)."""
    config = data.get("config")
    if isinstance(config, dict):
        if data.get("kind") == "board" and "discussion" not in config:
            config = {**config, "discussion": "alternating" if config.get("mode", "agents") == "agents" else "open"}
        if data.get("kind") == "consilium" and "lengths" not in config:
            config = {**config, "lengths": "legacy"}
        data = {**data, "config": config}
    return {**_spent_from_calls(data), "schema_version": "1.3"}


def _spent_from_calls(data: dict[str, Any]) -> dict[str, Any]:
    """``usage.spent`` and ``usage.cache_hits`` from the calls; a record whose calls do not read as calls is
    left for the model's own validation to report."""
    usage, calls = data.get("usage"), data.get("calls")
    if not isinstance(usage, dict) or "spent" in usage or not isinstance(calls, list):
        return data
    if not all(isinstance(c, dict) and isinstance(c.get("usage"), dict) for c in calls):
        return data
    try:
        spent = Usage.total(Usage.model_validate(c["usage"]) for c in calls if not c.get("cached"))
    except ValidationError:
        return data
    hits = sum(1 for c in calls if c.get("cached"))
    return {**data, "usage": {**usage, "spent": spent.model_dump(), "cache_hits": hits}}


def _trace_1_3(data: dict[str, Any]) -> dict[str, Any]:
    """1.3 → 1.4: every new field has the default that says how the older run went (``role_labels`` free, no
    reasoning, no setting left out, no reasoning tokens), so only the version changes."""
    return {**data, "schema_version": "1.4"}


def _trace_1_4(data: dict[str, Any]) -> dict[str, Any]:
    """1.4 → 1.5: a call's ``prices`` (null: cost unknown) and a consilium's ``human`` seat (null: no person sat
    in) are optional fields whose defaults say how the older run went, so only the version changes. They got a
    version of their own because 1.4 had been released: a 1.4 reader refuses a trace that has them."""
    return {**data, "schema_version": "1.5"}


def _trace_1_5(data: dict[str, Any]) -> dict[str, Any]:
    """1.5 → 1.6: a board run's open floor asked the moderator under one flat answer object (the rules across
    fields checked after decoding only); 1.6 asks under a union built per call and records which
    (``config.floor_schema``). Only an agents-mode meeting with an open floor ever asked on it: it records
    ``flat``; any other board trace ``union``, as a new one of its kind records."""
    config = data.get("config")
    if data.get("kind") == "board" and isinstance(config, dict) and "floor_schema" not in config:
        asked = config.get("mode", "agents") == "agents" and config.get("discussion") == "open"
        data = {**data, "config": {**config, "floor_schema": "flat" if asked else "union"}}
    return {**data, "schema_version": "1.6"}


def _trace_1_6(data: dict[str, Any]) -> dict[str, Any]:
    """1.6 → 1.7: a board trace's validation gains the official format score's ``failure_reason`` and fields, and
    its config ``cut_off`` and ``preset``. Nothing changes but the version: an older validation keeps its recorded
    numbers under its own ``rules`` (no official fields, failure reason 0), its run retried a cut-off answer
    (``cut_off: retry``) and had no preset. A 1.6 reader refuses these fields, hence a version of their own."""
    return {**data, "schema_version": "1.7"}


def _trace_1_7(data: dict[str, Any]) -> dict[str, Any]:
    """1.7 → 1.8: a board or Specialist Turn run's config gains ``prompt_files`` (the user's own prompts by stage).
    Nothing changes but the version: an older run used consilium's prompts (none). A 1.7 reader refuses the
    field, hence a version of its own."""
    return {**data, "schema_version": "1.8"}


def _trace_1_8(data: dict[str, Any]) -> dict[str, Any]:
    """1.8 → 1.9: a board or Specialist Turn run's config gains ``schema_failure`` and a turn trace
    ``answer_schema_failure``. Nothing changes but the version: an older run failed a turn whose answer broke the
    schema (``fail``) and so kept no such answer (null). A 1.8 reader refuses the fields, hence a version of their
    own."""
    return {**data, "schema_version": "1.9"}


#: version → (the next version, the step that makes it)
TRACE_STEPS: dict[str, tuple[str, Step]] = {"1.0": ("1.1", _trace_1_0), "1.1": ("1.2", _trace_1_1),
                                            "1.2": ("1.3", _trace_1_2), "1.3": ("1.4", _trace_1_3),
                                            "1.4": ("1.5", _trace_1_4), "1.5": ("1.6", _trace_1_5),
                                            "1.6": ("1.7", _trace_1_6), "1.7": ("1.8", _trace_1_7),
                                            "1.8": ("1.9", _trace_1_8)}


def _judgement_1_0(data: dict[str, Any]) -> dict[str, Any]:
    """1.0 → 1.1: juries (``jury``, and each item's ``votes`` and ``verdict``) are optional fields, null for
    one judge, so a 1.0 record is a 1.1 record by its version alone."""
    return {**data, "schema_version": "1.1"}


JUDGEMENT_STEPS: dict[str, tuple[str, Step]] = {"1.0": ("1.1", _judgement_1_0)}


def upgrade(data: Any, *, current: str, steps: dict[str, tuple[str, Step]], where: str) -> Any:
    """``data`` brought from its ``schema_version`` up to ``current``; a non-mapping is passed on for
    the model's own validation to report."""
    if not isinstance(data, dict):
        return data
    version = data.get("schema_version")
    seen = 0
    while version != current:
        if not isinstance(version, str) or version not in steps or seen > len(steps):
            known = ", ".join([*steps, current])
            raise UserError(f"{where}: schema_version: {version!r} is not supported (this consilium reads {known})")
        version, step = steps[version]
        data = step(data)
        seen += 1
    return data

