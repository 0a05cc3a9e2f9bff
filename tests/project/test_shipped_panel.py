"""The shipped scripted panel (examples/models/scripted-panel.yaml) answers more of the README's commands with no
model at all: a Specialist Turn, `models check`, a board in single mode with a transcript that passes every App. E.2
check, `calibrate evolve`'s optimiser, and every rubric in its own answer shape.
tests/judges/test_judging_visible.py takes the single-mode rule out to show a transcript that breaks the format."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main
from consilium.graphs.registry import read_trace
from consilium.judges.record import Judgement

ROOT = Path(__file__).resolve().parents[2]
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


def test_a_board_in_single_mode_writes_a_valid_transcript(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, "board", "--case", str(CASES / "tumor-board-nsclc.yaml"), "--mode", "single")
    [trace] = [read_trace(p) for p in run_dir.glob("*.trace.json")]
    assert trace.status == "completed"
    record = trace.model_dump(mode="json")
    # App. E.2: all seven checks hold, so exact = 1 and the score is 0.25·1 + 0.75·1 with no penalty.
    assert record["validation"]["exact"] == 1 and record["validation"]["score"] == 1.0
    assert record["conclusion"] == "The board advises CT. Treatment follows the result."


def test_calibrate_evolve_runs_with_the_panel_as_judge_and_optimiser(tmp_path: Path) -> None:
    run_dir = tmp_path / "judged"
    run_dir.mkdir()
    for n in range(4):
        case = tmp_path / f"case-{n}.yaml"
        case.write_text((CASES / "diagnostic-myocarditis.yaml").read_text().replace(
            "id: diagnostic-myocarditis", f"id: case-{n}"))
        made = _run(tmp_path, "simulate", "--case", str(case), "--format", "free-form")
        for trace in made.glob("*.trace.json"):
            trace.rename(run_dir / trace.name)
    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", PANEL,
                 "--component", "conclusion"]) == 0
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("case_id,component,criterion,rater,score\n"
                       + "".join(f"case-{n},conclusion,c1,a,{1 + n % 3}\n" for n in range(4)))
    assert main(["calibrate", "evolve", "--ratings", str(ratings), "--judgements", str(run_dir), "--rubric",
                 "ai-consilium", "--judge-model", PANEL, "--optimiser-model", PANEL, "--criterion", "c1",
                 "--population", "2", "--generations", "1", "--repeats", "1"]) == 0
    [row] = read_csv(run_dir / "calibration" / "evolve.ai-consilium.table5.csv")
    # The panel's judge scores 2 whatever the instruction, against physicians' 1, 2, 3, 1: errors 1, 0, 1, 1. Two
    # cases train and two validate, so the two MAEs average to 3/4 whichever way the cases split, and the
    # optimiser's rewording cannot help: the same MAE before and after, not promoted.
    train, val = float(row["train_reeval_best_initial_mean"]), float(row["val_best_initial_mean"])
    assert (train + val) / 2 == pytest.approx(3 / 4)
    assert row["train_reeval_best_descendant_mean"] == row["train_reeval_best_initial_mean"]
    assert row["promoted"] == "false" and row["decision"].startswith("not promoted")


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def test_a_catalogue_panel_names_catalogue_specialties_and_deliberates_the_same(tmp_path: Path) -> None:
    """--role-labels catalogue puts the catalogue's names in the assignment schema (an enum); the panel's
    schema_contains rule answers it with catalogue names, and the radiology seat dissents in round 1 as the
    radiologist does under free labels."""
    from consilium.agents.moderator import catalogue_labels

    run_dir = _run(tmp_path, "simulate", "--case", str(CASES / "diagnostic-myocarditis.yaml"), "--role-labels",
                   "catalogue")
    for trace in (read_trace(p) for p in sorted(run_dir.glob("*.trace.json"))):
        labels = [r.label for r in trace.roles]
        assert labels == ["Internal Medicine", "Neurology", "Radiology"] and set(labels) <= set(catalogue_labels())
        assert trace.status == "completed" and trace.stop_reason == "consensus" and len(trace.rounds) == 2
        [dissent] = [v for v in trace.rounds[0].votes if v.vote == "dissent"]
        assert dissent.role == "radiology" and dissent.requested_change == "add CT"
