"""The shipped scripted panel (examples/models/scripted-panel.yaml) answers more of the README's commands with no
model at all: a Specialist Turn, `models check`, and every rubric in its own answer shape (issue 18, part 7). Its
board in single mode still writes a transcript that breaks the format, on purpose: tests/test_judging_visible.py
shows that failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main
from consilium.judges.record import Judgement
from consilium.protocols.registry import read_trace

ROOT = Path(__file__).resolve().parents[1]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASES = ROOT / "examples" / "cases"


def _run(tmp_path: Path, *argv: str) -> Path:
    out = tmp_path / "runs"
    before = set(out.iterdir()) if out.is_dir() else set()
    assert main([*argv, "--model", PANEL, "--out", str(out)]) == 0
    [made] = set(out.iterdir()) - before
    return made


def test_a_specialist_turn_and_models_check_are_answered(tmp_path: Path, capsys: Any) -> None:
    run_dir = _run(tmp_path, "turn", "--case", str(CASES / "tumor-board-nsclc.yaml"), "--role",
                   "Radiation oncologist", "--question", "Is the patient a candidate for chemoradiotherapy?")
    [trace] = [read_trace(p) for p in run_dir.glob("*.trace.json")]
    assert trace.status == "completed" and trace.answer.startswith("Yes, concurrent chemoradiotherapy")
    capsys.readouterr()
    assert main(["models", "check", "--model", PANEL]) == 0
    assert '{"specialty": "Cardiology", "urgency": "urgent"}' in capsys.readouterr().out


#: The panel's judge meets every signed criterion (npcbench.txt): positives worth 10 in all, three majors at -2
#: and two minors at -1 present, normalised to 0-100.
NPC = (10 - 2 * 3 - 1 * 2) / 10 * 100
#: Four decisions (opentumorboard.txt App. E.2): sum of w * s/5 over the in-scope dimensions (clinical_trial is
#: locked out by the case), over the sum of their weights 1.00, 1.25, 1.15.
FOUR = (1.00 * 4 / 5 + 1.25 * 3 / 5 + 1.15 * 3 / 5) / (1.00 + 1.25 + 1.15)


@pytest.mark.parametrize(("rubric", "case", "command", "component", "expected"), [
    ("ai-consilium", "consultation-afib-anticoagulation.yaml", "simulate", "conclusion", {"mean": 2.0}),
    ("nmb-diagnosis-match", "diagnostic-myocarditis.yaml", "simulate", "conclusion", {"match": True}),
    ("npc-signed-criteria", "consultation-afib-anticoagulation.yaml", "simulate", "conclusion",
     {"score": NPC, "majors_present": 3, "minors_present": 2}),
    ("otb-conclusion-alignment", "tumor-board-nsclc.yaml", "board", "conclusion", {"score": 2.0}),
    ("otb-four-decision", "tumor-board-nsclc.yaml", "board", "conclusion", {"weighted_mean": FOUR}),
    ("otb-clinical-equivalence", "tumor-board-nsclc.yaml", "turn", "answer",
     {"score": 4.0, "critical_error": False, "unsupported_claim": False}),
])
def test_every_rubric_is_answered_in_its_own_shape(tmp_path: Path, rubric: str, case: str, command: str,
                                                   component: str, expected: dict[str, Any]) -> None:
    question = ["--role", "Radiation oncologist", "--question", "Is the patient a candidate for surgery?"]
    extra = {"simulate": ["--format", "structured"], "board": ["--mode", "agents"], "turn": question}[command]
    run_dir = _run(tmp_path, command, "--case", str(CASES / case), *extra)
    given = ["--reference-answer", "Yes, after mediastinal staging."] if command == "turn" else []
    assert main(["judge", str(run_dir), "--rubric", rubric, "--judge-model", PANEL, *given]) == 0
    [path] = list(run_dir.glob(f"*.judge.{rubric}.json"))
    judgement = Judgement.model_validate_json(path.read_text(encoding="utf-8"))
    mine = [i for i in judgement.items if i.component == component]
    # Every item the judge was asked is scored: none is not evaluable for an answer in the wrong shape.
    assert mine and not [i for i in mine if i.not_evaluable and "invalid judge output" in (i.reason or "")]
    aggregate = judgement.aggregates[component]
    assert {k: aggregate[k] for k in expected} == pytest.approx(expected)
