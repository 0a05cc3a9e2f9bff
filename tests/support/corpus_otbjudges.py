"""Bad inputs of the four-decision scope (merged into tests/cli/test_bad_inputs.py): each is
one line on stderr and exit 2, with nothing written."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: A consilium trace of a case whose reference labels no decisions.
UNLABELLED_TRACE = ROOT / "tests" / "fixtures" / "v1.0" / "diagnostic-myocarditis.free-form.trace.json"
UNLABELLED_CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"

Builder = Callable[[Path], tuple[list[str], str]]


def _trace(tmp: Path) -> Path:
    path = tmp / UNLABELLED_TRACE.name
    shutil.copy(UNLABELLED_TRACE, path)
    return path


def _cases(tmp: Path) -> Path:
    folder = tmp / "cases"
    folder.mkdir()
    shutil.copy(UNLABELLED_CASE, folder / UNLABELLED_CASE.name)
    return folder


CORPUS: dict[str, Builder] = {
    # --scope frozen on a case without hand-labelled decisions is no longer refused: a candidate-blind call
    # labels them (tests/judges/test_judge_otb_layout.py::test_the_frozen_scope_is_labelled_blind_cached_per_
    # reference_and_recorded).
    "judge --scope not a protocol": lambda t: (
        ["judge", str(t), "--rubric", "otb-four-decision", "--scope", "wide", "--judge-model", "embedded"],
        "--scope: invalid choice: 'wide'"),
    "cohort --scope not a protocol": lambda t: (
        ["cohort", "--cases", str(t), "--scope", "blind"], "--scope: invalid choice: 'blind'"),
}
