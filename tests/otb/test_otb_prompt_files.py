"""A user's own prompt for the board and turn stages (``--prompt-file STAGE=PATH``): the file's text is the system
message byte for byte (stripped, as the authors' scripts read their prompts), the case goes in the authors' user
message (``CASE SUMMARY:`` / ``SLIDE DESCRIPTIONS:``, and for a turn ``TARGET SPECIALIST ROLE:`` and
``QUESTION:``), the text is recorded whole in the trace so a replay is exact, and a bad item is one line, exit 2.
The expected messages are written out from the released records (tests/support/otb_release.py), not built by
the code under test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.otb_release import write_release
from support.scripts import Scripted

from consilium.cli import main

TRANSCRIPT = ("<discussion>\n<turn 1> Moderator: Surgery?\n<turn 2> Surgeon: After staging.\n</discussion>\n"
              "<conclusion>Stage first. Then operate.</conclusion>")
OWN = "  You are the named specialist.\nReply with JSON: one key, answer.\n\n"


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    out = tmp_path / "cases"
    assert main(["cases", "import", "opentumorboard", str(write_release(tmp_path / "data")), "--out", str(out)]) == 0
    return out


def _trace(folder: Path) -> tuple[Path, dict[str, object]]:
    [path] = list(folder.rglob("*.trace.json"))
    return path, json.loads(path.read_text())


@pytest.mark.parametrize(("case", "slides"), [
    ("sim_000001", "<image> Slide 1 of case 1: CT image."),  # one slide: its released line
    ("sim_000003", ""),  # no slides: the turn template sends the empty text as it is
])
def test_a_turn_sends_the_users_prompt_and_the_authors_user_message_and_replays(
        cases: Path, tmp_path: Path, case: str, slides: str, capsys: pytest.CaptureFixture[str]) -> None:
    prompt = tmp_path / "turn.txt"
    prompt.write_text(OWN, encoding="utf-8")
    panel = Scripted("m").rule("specialist_turn", json={"answer": "Stage it first."}).write(tmp_path / "p.json")
    n = case[-1]
    assert main(["turn", "--case", str(cases / f"{case}.yaml"), "--model", panel, "--role", "Nurse Navigator",
                 "--question", "Who calls the patient?", "--prompt-file", f"specialist_turn={prompt}",
                 "--out", str(tmp_path / "runs")]) == 0
    path, trace = _trace(tmp_path / "runs")
    [call] = trace["calls"]  # type: ignore[misc]
    system, user = call["messages"]
    assert system["content"] == "You are the named specialist.\nReply with JSON: one key, answer."
    assert user["content"] == (f"TARGET SPECIALIST ROLE:\nNurse Navigator\n\nCASE SUMMARY:\nSummary of case {n}: a "
                               f"patient with a tumour.\n\nSLIDE DESCRIPTIONS:\n{slides}\n\nQUESTION:\n"
                               "Who calls the patient?")
    assert trace["config"]["prompt_files"] == {"specialist_turn": system["content"]}  # type: ignore[index]
    assert trace["schema_version"] == "1.9" and trace["answer"] == "Stage it first."
    capsys.readouterr()
    assert main(["replay", str(path)]) == 0
    assert "identical" in capsys.readouterr().out


@pytest.mark.parametrize(("case", "slides"), [
    ("sim_000002", "<image> Slide 1 of case 2: CT image.\n<image> Slide 2 of case 2: CT image."),
    ("sim_000003", "No slide descriptions are available."),  # no slides: the board template's fallback
])
def test_a_single_call_board_sends_the_users_prompt_and_the_authors_user_message(
        cases: Path, tmp_path: Path, case: str, slides: str) -> None:
    prompt = tmp_path / "board.txt"
    prompt.write_text("Simulate the board.\n", encoding="utf-8")
    panel = Scripted("m").rule("board_turn", response=TRANSCRIPT).write(tmp_path / "p.json")
    assert main(["board", "--case", str(cases / f"{case}.yaml"), "--model", panel, "--preset", "otb-paper",
                 "--prompt-file", f"board_single={prompt}", "--out", str(tmp_path / "runs")]) == 0
    _, trace = _trace(tmp_path / "runs")
    [call] = trace["calls"]  # type: ignore[misc]
    assert [m["content"] for m in call["messages"]] == [
        "Simulate the board.", f"CASE SUMMARY:\nSummary of case {case[-1]}: a patient with a tumour.\n\n"
                               f"SLIDE DESCRIPTIONS:\n{slides}"]
    assert trace["config"]["prompt_files"] == {"board_single": "Simulate the board."}  # type: ignore[index]
    assert trace["validation"]["score"] == 1.0  # type: ignore[index]


def test_without_a_prompt_file_the_run_keeps_consiliums_own_prompts(cases: Path, tmp_path: Path) -> None:
    panel = Scripted("m").rule("specialist_turn", json={"answer": "Yes."}).write(tmp_path / "p.json")
    assert main(["turn", "--case", str(cases / "sim_000001.yaml"), "--model", panel, "--role", "Surgeon",
                 "--question", "Operate?", "--out", str(tmp_path / "runs")]) == 0
    _, trace = _trace(tmp_path / "runs")
    [call] = trace["calls"]  # type: ignore[misc]
    assert trace["config"]["prompt_files"] == {}  # type: ignore[index]
    assert call["messages"][1]["content"].startswith("CASE\n")


@pytest.mark.parametrize(("command", "item", "says"), [
    ("turn", "board_single={prompt}", "--prompt-file: 'board_single={prompt}': unknown stage 'board_single' "
                                      "(here: specialist_turn)"),
    ("turn", "specialist_turn", "--prompt-file: 'specialist_turn' is not STAGE=PATH"),
    ("turn", "specialist_turn={missing}", "--prompt-file: {missing}: cannot be read (No such file or directory)"),
    ("turn", "specialist_turn={empty}", "--prompt-file: {empty}: the prompt file is empty"),
    ("board", "board_single={prompt}", "--prompt-file: a board's prompt file replaces the prompt of the one call "
                                       "that writes the whole meeting (stage board_single); run it with --mode "
                                       "single or --preset otb-paper"),
])
def test_a_bad_prompt_file_is_one_line_exit_2_before_any_run(cases: Path, tmp_path: Path, command: str, item: str,
                                                             says: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = {"prompt": tmp_path / "p.txt", "missing": tmp_path / "none.txt", "empty": tmp_path / "e.txt"}
    files["prompt"].write_text("Mine.")
    files["empty"].write_text(" \n")
    panel = Scripted("m").write(tmp_path / "m.json")
    extra = ["--role", "Surgeon", "--question", "Operate?"] if command == "turn" else []
    capsys.readouterr()
    assert main([command, "--case", str(cases / "sim_000001.yaml"), "--model", panel, *extra, "--prompt-file",
                 item.format(**files), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"consilium: error: {says.format(**files)}"
    assert not (tmp_path / "runs").exists()
