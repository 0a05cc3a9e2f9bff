"""A one-arm cohort judged with ai-consilium, the shipped scripted panel (examples/models/scripted-panel.yaml)
as both panel and judge: for tests that judge it again, resume it or report on it."""

from __future__ import annotations

from pathlib import Path

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"


def build_panel_judged_cohort(tmp: Path) -> Path:
    """Run the cohort (the myocarditis case, free-form) under ``tmp / "out"`` and return its run folder."""
    assert main(["cohort", "--cases", str(CASE), "--model", PANEL, "--formats", "free-form", "--judge",
                 "ai-consilium", "--judge-model", PANEL, "--out", str(tmp / "out")]) == 0
    (run_dir,) = (tmp / "out").iterdir()
    return run_dir
