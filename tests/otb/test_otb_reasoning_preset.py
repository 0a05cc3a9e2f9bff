"""``--preset otb-paper-reasoning``: a board or a turn as OpenTumorBoard's authors ran the open reasoning models
(evaluation/paper_configurations.json, the ``*_reasoning`` entries and MedReason-8B: temperature 0.6, top_p 1.0,
seed 0, max_tokens 65,536 for Board Simulation and 8,192 for a caption-input Specialist Turn), one call, no
repair, a cut-off answer kept; a flag beside it wins. The expected settings are the file's, written out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.scripts import Scripted

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
BAD = "<discussion>\n<turn 1> Moderator: Stage first.\n</discussion>"  # no conclusion: never repaired


def _run(tmp_path: Path, command: str, *extra: str) -> dict[str, object]:
    panel = (Scripted("reasoner").rule("board_turn", response=BAD)
             .rule("specialist_turn", json={"answer": "Stage it first."}).write(tmp_path / "p.json"))
    args = ["--role", "Surgeon", "--question", "Operate?"] if command == "turn" else []
    main([command, "--case", str(CASE), "--model", panel, *args, "--preset", "otb-paper-reasoning", *extra,
          "--out", str(tmp_path / "runs")])
    [path] = list((tmp_path / "runs").rglob("*.trace.json"))
    data: dict[str, object] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize(("command", "stage", "tokens"), [("board", "board_single", 65536),
                                                          ("turn", "specialist_turn", 8192)])
def test_the_reasoning_preset_runs_one_call_at_the_papers_settings(tmp_path: Path, command: str, stage: str,
                                                                   tokens: int) -> None:
    trace = _run(tmp_path, command)
    [call] = trace["calls"]  # type: ignore[misc]  # one call: a malformed board is not repaired
    assert call["settings"]["temperature"] == 0.6 and call["settings"]["top_p"] == 1.0
    assert (call["settings"]["seed"], call["settings"]["max_tokens"]) == (0, tokens)
    config = trace["config"]
    assert (config["preset"], config["max_repairs"], config["cut_off"]) == (  # type: ignore[index]
        "otb-paper-reasoning", 0, "score")
    if command == "board":
        assert trace["mode"] == "single" and trace["validation"]["score"] == -0.75  # type: ignore[index]


def test_a_flag_beside_the_reasoning_preset_overrides_it(tmp_path: Path) -> None:
    # HuatuoGPT-3-32B's board budget in the file is 32,768: given as a flag, the rest of the preset stays.
    trace = _run(tmp_path, "board", "--max-tokens", "32768")
    [call] = trace["calls"]  # type: ignore[misc]
    assert (call["settings"]["temperature"], call["settings"]["max_tokens"]) == (0.6, 32768)
