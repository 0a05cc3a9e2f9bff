"""The run record of a consilium: a versioned, documented file format (docs/traces.md).

A trace is plain JSON (``json.load`` reads it; ``pandas.json_normalize`` flattens
its ``calls`` or ``rounds``). ``schema_version`` changes whenever a record's shape
or a field's meaning changes; the reader upgrades every older version it knows
(consilium/traces/versions.py) and refuses the ones it does not.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from consilium.models import CallRecord, Usage, UsageLedger
from consilium.traces.config import ConfigRecord

__all__ = ["SCHEMA_VERSION", "TraceBase", "UsageSummary"]

#: 1.1: ``model_spec`` (the spec the trace was made with); calls may carry ``stage_limit`` and
#: ``finish_reason: "repetition"``; an empty or cut-off answer is a failed attempt, never a result.
#: 1.2: a board trace's ``validation`` has the repetition measures and penalty and the version of the
#: checks that made it (``rules``).
#: 1.3: a board run's ``config.discussion`` ("open": the moderator may pass the floor; "alternating" for older
#: traces); agents-mode turns may carry ``floor`` and ``responds_to``; ``moderator_images_sent``; a call's
#: message may carry ``captions`` beside its ``images``. ``usage.spent`` and ``usage.cache_hits``: what the run
#: spent, response-cache hits left out (counted from the calls when an older trace is read).
#: 1.4: a trace's ``kind`` may be any installed protocol's (``single`` among them) and its ``config`` is that
#: protocol's record type, with ``role_labels`` ("free" when absent: how older runs assigned roles); a call may
#: carry ``reasoning`` and ``omitted_settings``; usage counts ``reasoning_tokens`` (0 when absent).
#: 1.5: a call records its model's ``prices`` (null when absent: cost unknown, models/pricing.py); a consilium
#: trace may carry ``human``, the seat a person took (absent: no person sat in).
#: 1.6: a board run's ``config.floor_schema``, the open floor's moderator answer schema ("union"; "flat" for older
#: traces, which asked under one flat object).
#: 1.7: a board trace's ``validation`` is the official App. E.2 format score (format ``rules`` "3"), with its
#: ``failure_reason`` and every official field (``official``); a board run's config gains ``cut_off`` and ``preset``.
#: 1.8: a board or Specialist Turn run's config gains ``prompt_files``, the user's own prompts (--prompt-file) by stage.
#: 1.9: a board or Specialist Turn run's config gains ``schema_failure``; a Specialist Turn trace may carry
#: ``answer_schema_failure``, the format finding of an answer kept though it broke consilium's answer schema.
SCHEMA_VERSION = "1.9"


class UsageSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by_stage: dict[str, Usage]
    by_role: dict[str, Usage]
    by_round: dict[str, Usage]
    total: Usage = Field(description="every call's usage as generated (a response-cache hit: the usage of the "
                                     "call that produced the answer)")
    spent: Usage | None = Field(default=None, description="what this run spent: the calls a model answered, "
                                                          "cache hits left out (null: not recorded)")
    cache_hits: int | None = Field(default=None, description="calls answered from the response cache")

    @classmethod
    def from_ledger(cls, ledger: UsageLedger) -> UsageSummary:
        return cls(by_stage=ledger.by_stage(), by_role=ledger.by_role(), by_round=ledger.by_round(),
                   total=ledger.total, spent=ledger.spent, cache_hits=ledger.cache_hits)


class TraceBase(BaseModel):
    """What every run record holds, whatever the protocol."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1.9"] = "1.9"
    run_id: str
    case_id: str
    case_hash: str
    case: dict[str, Any] = Field(description="the case as run, so the trace replays on its own")
    model: str = Field(description="the (panel) model's id")
    model_spec: str | None = Field(default=None, description="the model spec it was run with, e.g. openai:gpt-4o "
                                                             "(null in traces older than 1.1)")
    config: ConfigRecord = Field(description="the run's settings plus prompt file hashes (each protocol's trace "
                                             "type narrows it to its own record type)")
    status: Literal["completed", "failed"]
    error: str | None = None
    failed_stage: str | None = Field(default=None, description="the stage of the call a failed run stopped at")
    usage: UsageSummary
    calls: list[CallRecord]
    started_at: str
    wall_s: float
    versions: dict[str, str]

    #: Where the record was read from and the schema version its file was written as (set by the reader,
    #: consilium/graphs/registry.py; a record made in this process: no file, today's version).
    _origin: tuple[str, str] = PrivateAttr(default=("a run made by this version", SCHEMA_VERSION))

    def read_from(self, where: str, version: str) -> Self:
        """This record, noted as read from ``where``, whose file was written as schema ``version``."""
        self._origin = (where, version)
        return self

    @property
    def origin(self) -> tuple[str, str]:
        """Where the record was read from, and the schema version its file was written as."""
        return self._origin
