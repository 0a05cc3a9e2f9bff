"""Runs the network tests analyse (tests/reports/test_networks.py): a scripted cohort of
copied cases, and one free-form consilium of the varied panel (tests/fixtures/networks/varied-panel.yaml)."""

from __future__ import annotations

from pathlib import Path

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "networks"
MYOCARDITIS = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"


def cohort(tmp: Path, cases: list[Path], *flags: str) -> Path:
    folder = tmp / "cases"
    folder.mkdir(parents=True)
    for case in cases:
        (folder / case.name).write_text(case.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["cohort", "--cases", str(folder), "--no-cache", "--out", str(tmp / "runs"), *flags]) == 0
    (run,) = (tmp / "runs").iterdir()
    return run


def simulate_varied(tmp: Path) -> Path:
    assert main(["simulate", "--case", str(MYOCARDITIS), "--format", "free-form", "--no-cache", "--out", str(tmp),
                 "--model", f"scripted:{FIXTURES / 'varied-panel.yaml'}"]) == 0
    (run,) = tmp.iterdir()
    return run
