"""Bad length budgets in a run config or an experiment.

Merged into tests/cli/test_bad_inputs.py: each must exit 2 with one line naming the file and field, before
anything runs or is written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = str(ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml")
MODEL = ["--model", "scripted:x.json"]

Builder = Callable[[Path], tuple[list[str], str]]


def _file(tmp: Path, text: str, name: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def simulate_config(text: str, expected: str) -> Builder:
    return lambda t: (["simulate", "--case", CASE, *MODEL, "--config", _file(t, text, "run.yaml")],
                      f"run.yaml: {expected}")


def experiment(text: str, expected: str) -> Builder:
    return lambda t: (["cohort", "--cases", CASE, *MODEL, "--experiment", _file(t, text, "exp.yaml")],
                      f"exp.yaml: {expected}")


CORPUS: dict[str, Builder] = {
    "report budget too small": simulate_config("report_budget_chars: 100\n",
                                               "report_budget_chars: Input should be greater than or equal to 300"),
    "opinion budget zero": simulate_config("opinion_budget_chars: 0\n", "opinion_budget_chars: "),
    "report budget a string": simulate_config("report_budget_chars: '4800'\n", "report_budget_chars: "),
    "opinion budget boolean": simulate_config("opinion_budget_chars: true\n", "opinion_budget_chars: "),
    "report budget fraction": simulate_config("report_budget_chars: 4800.5\n", "report_budget_chars: "),
    "report budget null": simulate_config("report_budget_chars: null\n", "report_budget_chars: "),
    "lengths unknown": simulate_config("lengths: unequal\n", "lengths: "),
    "experiment report budget": experiment("run:\n  report_budget_chars: -1\n", "run.report_budget_chars: "),
    "misspelt budget": simulate_config("report_budget: 4800\n", "report_budget: "),
}
