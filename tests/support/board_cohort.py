"""A board cohort judged with the four-decision rubric, for the viewer's and the exports' tests.

Run by the real CLI with the scripted panel (examples/models/scripted-panel.yaml) as panel and judge, on
the shipped cases: its four-decision answer is therapy 4, surgery 3, next action 3, clinical trial −1; the
NSCLC and rectal cases lock clinical trial out of scope, the HER2 case has it in scope (so the judge's −1
there is invalid: not evaluable). The tests work their expected values out by hand from these facts.
"""

from __future__ import annotations

from pathlib import Path

from consilium.cli import main
from support.isolation import isolated

ROOT = Path(__file__).resolve().parents[2]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASES = ROOT / "examples" / "cases"
#: App. E.2: (1.00·4/5 + 1.25·3/5 + 1.15·3/5) / (1.00 + 1.25 + 1.15), clinical trial (−1) out of the sums.
WEIGHTED = (1.00 * 4 / 5 + 1.25 * 3 / 5 + 1.15 * 3 / 5) / 3.40


def build_board_cohort(tmp: Path) -> Path:
    """Run the cohort under ``tmp`` (its own cache and log there) and return its run folder."""
    with isolated(tmp):  # the conftest's isolation, for a fixture wider than a test
        assert main(["cohort", "--cases", str(CASES), "--protocol", "board", "--judge", "otb-four-decision",
                     "--model", PANEL, "--judge-model", PANEL, "--out", str(tmp / "runs")]) == 0
    [run_dir] = list((tmp / "runs").iterdir())
    return run_dir


def nsclc_agents_trace(run_dir: Path) -> Path:
    """The NSCLC case's multi-agent board trace."""
    [trace] = sorted(run_dir.glob("arms/*/*/tumor-board-nsclc.board-agents.trace.json"))
    return trace
