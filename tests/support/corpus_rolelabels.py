"""Bad ``role_labels`` values, merged into tests/cli/test_bad_inputs.py: each exits 2 with one
line naming the flag or the config file and field, and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = str(ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml")
BOARD_CASE = str(ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml")
MODEL = ["--model", "scripted:x.json"]

Builder = Callable[[Path], tuple[list[str], str]]


def data_file(tmp: Path, text: str, name: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


CORPUS: dict[str, Builder] = {
    "unknown role labels flag": lambda t: (["simulate", "--case", CASE, *MODEL, "--role-labels", "fixed"],
                                           "--role-labels: invalid choice: 'fixed'"),
    "unknown role labels flag of board": lambda t: (["board", "--case", BOARD_CASE, *MODEL, "--role-labels", "any"],
                                                    "--role-labels: invalid choice: 'any'"),
    "unknown role labels flag of cohort": lambda t: (["cohort", "--cases", str(ROOT / "examples" / "cases"), *MODEL,
                                                      "--role-labels", "Catalogue"],
                                                     "--role-labels: invalid choice: 'Catalogue'"),
    "unknown role labels in config": lambda t: (["simulate", "--case", CASE, *MODEL, "--config",
                                                 data_file(t, "role_labels: catalog\n", "run.yaml")],
                                                "run.yaml: role_labels"),
    "role labels in config not a string": lambda t: (["simulate", "--case", CASE, *MODEL, "--config",
                                                      data_file(t, "role_labels: true\n", "run.yaml")],
                                                     "run.yaml: role_labels"),
}
