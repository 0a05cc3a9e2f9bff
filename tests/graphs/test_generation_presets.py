"""Generation presets: ``--preset otb-paper`` for ``board`` and ``turn`` (and the API's ``preset``) runs as
OpenTumorBoard's authors ran the open models (evaluation/paper_configurations.json: temperature 0.0, top_p
1.0, seed 0, max_tokens 65,536 for Board Simulation and 8,192 for a caption-input Specialist Turn): one call,
no repair, a cut-off answer kept and scored as the official code scores it; settings given beside the preset
override it, and the preset is recorded in the trace's config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consilium.api.meetings import MeetingOptions, board_meeting, specialist_turn
from consilium.cli import main
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.graphs.registry import read_trace

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"

WELL = (
    "<discussion>\n"
    "<turn 1> Moderator: Staging first. Radiology?\n"
    "<turn 2> Radiologist: One hilar node, no distant disease.\n"
    "<turn 3> Medical Oncologist: Then lobectomy, adjuvant therapy by pathology.\n"
    "</discussion>\n"
    "<conclusion>The board recommends lobectomy. Adjuvant therapy follows pathology.</conclusion>"
)
MISNUMBERED = WELL.replace("<turn 2>", "<turn 7>")  # numbers 1, 7, 3: two of three in place
CUT = WELL[:WELL.index(" no distant")]


def script(tmp: Path, name: str, text: str, finish: str = "stop") -> str:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"model": "scripted-board", "rules": [
        {"stage": "board_turn", "response": text, "finish_reason": finish}]}))
    return f"scripted:{path}"


def board(tmp: Path, name: str, model: str, *flags: str) -> BoardTrace:
    out = tmp / name
    main(["board", "--case", str(CASE), "--model", model, "--out", str(out), *flags])
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace)
    return trace


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BoardTrace]:
    tmp = tmp_path_factory.mktemp("presets")
    config = tmp / "board.yaml"
    config.write_text("max_tokens:\n  board_single: 4000\nmax_repairs: 1\n")
    return {
        "paper": board(tmp, "paper", script(tmp, "well", WELL), "--preset", "otb-paper"),
        "flags": board(tmp, "flags", script(tmp, "well2", WELL), "--preset", "otb-paper", "--temperature", "0.3",
                       "--max-tokens", "1000"),
        "file": board(tmp, "file", script(tmp, "mis", MISNUMBERED), "--preset", "otb-paper", "--config",
                      str(config)),
        "agents": board(tmp, "agents", f"scripted:{PANEL}", "--preset", "otb-paper", "--mode", "agents"),
        "no-repair": board(tmp, "no-repair", script(tmp, "mis2", MISNUMBERED), "--preset", "otb-paper"),
        "repaired": board(tmp, "repaired", script(tmp, "mis3", MISNUMBERED), "--mode", "single"),
        "cut-kept": board(tmp, "cut-kept", script(tmp, "cut", CUT, "length"), "--preset", "otb-paper"),
        "cut-retried": board(tmp, "cut-retried", script(tmp, "cut2", CUT, "length"), "--mode", "single"),
    }


def test_the_paper_preset_writes_the_meeting_in_one_call_with_the_papers_decoding(
        runs: dict[str, BoardTrace]) -> None:
    trace = runs["paper"]
    assert trace.mode == "single" and trace.status == "completed" and len(trace.calls) == 1
    settings = trace.calls[0].settings
    assert (settings.temperature, settings.top_p, settings.seed, settings.max_tokens) == (0.0, 1.0, 0, 65536)
    config = trace.config
    assert (config.preset, config.max_repairs, config.cut_off) == ("otb-paper", 0, "score")
    assert config.max_tokens["board_single"] == 65536 and config.max_tokens["specialist_turn"] == 8192
    assert config.max_tokens["conclusion"] == 512  # a stage the preset leaves keeps its default
    assert trace.validation is not None and trace.validation.score == 1.0


def test_flags_given_beside_the_preset_override_it(runs: dict[str, BoardTrace]) -> None:
    flagged = runs["flags"]
    settings = flagged.calls[0].settings
    assert (settings.temperature, settings.max_tokens, settings.seed) == (0.3, 1000, 0)
    assert set(flagged.config.max_tokens.values()) == {1000} and flagged.config.preset == "otb-paper"
    assert flagged.config.max_repairs == 0  # not given: the preset's
    agents = runs["agents"]  # --mode beside the preset: the meeting of agents, under the preset's decoding
    assert agents.mode == "agents" and agents.config.preset == "otb-paper" and len(agents.calls) > 1
    assert all(c.settings.temperature == 0.0 and c.settings.seed == 0 for c in agents.calls)


def test_a_config_file_beside_the_preset_overrides_it_stage_by_stage(runs: dict[str, BoardTrace]) -> None:
    trace = runs["file"]
    assert trace.config.max_tokens["board_single"] == 4000 and trace.config.max_tokens["specialist_turn"] == 8192
    # max_repairs 1 from the file: the misnumbered meeting is sent back once, then recorded as it is
    assert trace.config.max_repairs == 1 and len(trace.calls) == 2
    assert [c.settings.max_tokens for c in trace.calls] == [4000, 4000]


def test_under_the_preset_a_malformed_meeting_is_recorded_and_scored_not_repaired(
        runs: dict[str, BoardTrace]) -> None:
    kept, repaired = runs["no-repair"], runs["repaired"]
    assert len(kept.calls) == 1 and kept.transcript == MISNUMBERED and kept.status == "completed"
    # numbering 2/3: dense 1 - .1875/3, exact 0, score .25·dense
    assert kept.validation is not None
    assert kept.validation.dense == pytest.approx(1 - 0.1875 / 3, abs=1e-12) and kept.validation.exact == 0
    assert kept.validation.score == pytest.approx(0.25 * (1 - 0.1875 / 3), abs=1e-12)
    # without the preset: two repairs, the same answer each time, then the same transcript recorded
    assert len(repaired.calls) == 3 and repaired.transcript == MISNUMBERED
    assert any("after 2 repair(s)" in note for note in repaired.notes)


def test_under_the_preset_a_cut_off_meeting_is_kept_and_fails_the_format_score(runs: dict[str, BoardTrace]) -> None:
    kept = runs["cut-kept"]
    assert kept.status == "completed" and len(kept.calls) == 1 and kept.transcript == CUT
    assert kept.calls[0].finish_reason == "length"
    assert kept.validation is not None and kept.validation.failure_reason == 1 and kept.validation.score == -1.0
    # without the preset: asked again with twice the room, twice, then the stage fails and nothing is scored
    retried = runs["cut-retried"]
    assert retried.status == "failed" and retried.validation is None
    assert [c.settings.max_tokens for c in retried.calls] == [3072, 6144, 12288]


def test_a_preset_run_replays_identically(runs: dict[str, BoardTrace], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for name in ("paper", "file", "cut-kept"):
        path = tmp_path / f"{name}.trace.json"
        path.write_text(runs[name].model_dump_json())
        paths.append(str(path))
    capsys.readouterr()
    assert main(["replay", *paths]) == 0
    assert capsys.readouterr().out.count(": identical (") == 3


def test_the_turn_preset_gives_the_specialist_turns_budget(tmp_path: Path) -> None:
    out = tmp_path / "turn"
    assert main(["turn", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(out), "--preset",
                 "otb-paper", "--role", "Radiologist", "--question", "Is the node resectable?"]) == 0
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, TurnTrace) and trace.config.preset == "otb-paper" and len(trace.calls) == 1
    settings = trace.calls[0].settings
    assert (settings.temperature, settings.top_p, settings.seed, settings.max_tokens) == (0.0, 1.0, 0, 8192)


def test_the_api_takes_the_preset_as_a_keyword(tmp_path: Path) -> None:
    model = script(tmp_path, "api", WELL)
    done = board_meeting(CASE, options=MeetingOptions(out=tmp_path / "api", model=model, preset="otb-paper"))
    assert done.trace.mode == "single" and done.trace.config.preset == "otb-paper"
    assert done.trace.calls[0].settings.max_tokens == 65536
    warmer = board_meeting(CASE, options=MeetingOptions(out=tmp_path / "api2", model=model, preset="otb-paper",
                                                        config=BoardConfig(temperature=0.5)))
    assert warmer.trace.calls[0].settings.temperature == 0.5 and warmer.trace.config.max_repairs == 0
    turn = specialist_turn(CASE, "Radiologist", "Is the node resectable?",
                           MeetingOptions(out=tmp_path / "api3", model=f"scripted:{PANEL}", preset="otb-paper"))
    assert turn.trace.calls[0].settings.max_tokens == 8192


def test_an_unknown_preset_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["board", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--preset", "otb-papers"]) == 2
    assert "invalid choice: 'otb-papers' (choose from 'otb-paper', 'otb-paper-reasoning')" in capsys.readouterr().err
    config = tmp_path / "board.yaml"
    config.write_text("preset: otb-papers\n")
    capsys.readouterr()
    assert main(["board", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--config", str(config),
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(config) in err and "preset" in err
    assert not (tmp_path / "out").exists()
