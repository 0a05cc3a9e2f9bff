"""Traces written before each protocol became its own package (tests/fixtures/v1.3, commit 742e1fb) still
load as their protocol's record type, with a typed config, and replay identically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import protocol_of, read_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "v1.3"


@pytest.mark.parametrize(("name", "kind", "model", "calls"), [
    ("diagnostic-myocarditis.structured.trace.json", Trace, "consilium", 12),
    ("tumor-board-nsclc.board-single.trace.json", BoardTrace, "board", 3),
    ("tumor-board-nsclc.turn.trace.json", TurnTrace, "turn", 1),
])
def test_a_pre_package_trace_loads_typed_and_replays(name: str, kind: type, model: str, calls: int,
                                                     capsys: Any) -> None:
    path = FIXTURES / name
    trace = read_trace(path)
    assert isinstance(trace, kind) and protocol_of(trace).name == model
    # The config is the protocol's record type; its settings are what the run had, by name or by key.
    assert trace.config.seed == 0 and trace.config["temperature"] == 0.0
    assert trace.config.prompts and all(len(digest) == 12 for digest in trace.config.prompts.values())
    assert main(["replay", str(path)]) == 0
    assert f"identical ({calls} recorded calls served, 0 model calls" in capsys.readouterr().out


def test_the_recorded_board_inputs_are_typed() -> None:
    board = read_trace(FIXTURES / "tumor-board-nsclc.board-single.trace.json")
    assert board.config.mode == "single" and board.config.moderator_model == "scripted-panel"
    assert board.config.images == [] and board.config.discussion == "open"
    assert "images" not in board.config.run_settings() and "mode" not in board.config.run_settings()


@pytest.mark.parametrize("name", ["consilium", "board", "turn", "single"])
def test_a_record_has_its_protocols_defaults(name: str) -> None:
    """A trace's config record must read a missing setting as the protocol's own default (a board's
    min_roles is 2, not the shared 3), or an older trace would replay under other settings."""
    from consilium.graphs.registry import get_protocol

    protocol = get_protocol(name)
    record = protocol.trace_model.model_fields["config"].annotation
    config = protocol.config_model
    assert isinstance(record, type) and issubclass(record, config)
    for field, info in config.model_fields.items():
        assert record.model_fields[field].get_default(call_default_factory=True) == \
            info.get_default(call_default_factory=True), field
    assert record.STAGE_TOKENS == config.STAGE_TOKENS


def test_a_shard_row_from_before_the_protocol_column_gets_one_after_model() -> None:
    from consilium.cohort.merge import with_protocol

    row = {"case_id": "c", "model_spec": "m", "model": "x", "format": "board-agents", "status": "completed"}
    assert list(with_protocol(row).items()) == [("case_id", "c"), ("model_spec", "m"), ("model", "x"),
                                                ("protocol", "board"), ("format", "board-agents"),
                                                ("status", "completed")]
    assert with_protocol({"model": "x", "format": "structured"})["protocol"] == "consilium"
    assert with_protocol({"model": "x", "protocol": "single", "format": "single-free-form"})["protocol"] == "single"
