"""Dollars wherever a run's usage is shown: the board and turn summaries of a priced model, and costs from
estimated tokens (the scripted backend counts with tiktoken) marked in arms.csv and the report's cost tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"


@pytest.mark.parametrize("command", [
    ["board", "--case", str(ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"), "--mode", "single"],
    ["turn", "--case", str(ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"), "--role", "Radiation Oncology",
     "--question", "Would you irradiate?"]], ids=["board", "turn"])
def test_board_and_turn_summaries_show_dollars(command: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "priced.yaml"
    config.write_text(f"spec: {PANEL}\nprices: {{input: 2.5, output: 10.0}}\n")
    assert main([*command, "--model-config", str(config), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "tokens by stage (input / output / calls · cost, unknown without prices):" in out
    total = next(line for line in out.splitlines() if line.strip().startswith("total"))
    assert " · $" in total


def test_costs_from_estimated_tokens_are_marked(tmp_path: Path) -> None:
    import csv

    config = tmp_path / "priced.yaml"
    config.write_text(f"spec: {PANEL}\nprices: {{input: 2.5, output: 10.0}}\n")
    assert main(["cohort", "--cases", str(CASE), "--model-config", str(config), "--formats", "free-form",
                 "--judge", "ai-consilium", "--judge-model", PANEL, "--out", str(tmp_path / "out")]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    with (run_dir / "arms.csv").open(encoding="utf-8") as handle:
        (arm,) = list(csv.DictReader(handle))
    assert arm["cost_usd"] and arm["cost_estimated"] == "True"  # the scripted backend's tokens are estimated
    assert main(["report", str(run_dir), "--bootstrap", "10"]) == 0
    for name in ("cost", "cost_by_stage"):
        with (run_dir / "report" / f"{name}.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert rows and all(r["estimated"] == "True" for r in rows)
    md = (run_dir / "report" / "report.md").read_text()
    assert "estimated = true: tokens counted with tiktoken, so the dollars are estimates too)" in md
