"""Calibration pairs a rating with the judged trace it rates: case, variant, model and run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.scripts import STRUCTURED_REPORT, Scripted, sections

from consilium.calibration.pairs import load_judgements, pair_ratings
from consilium.calibration.ratings import load_ratings
from consilium.cli import main
from consilium.errors import UserError
from consilium.judges.record import read_judgement
from consilium.judges.rubric import load_rubric

ROOT = Path(__file__).resolve().parents[2]
AFIB = ROOT / "examples" / "cases" / "consultation-afib-anticoagulation.yaml"
RUBRIC = load_rubric("otb-conclusion-alignment")
HEADER = "case_id,component,criterion,rater,score,variant,model,run\n"


def panel(model: str, plan: str) -> dict[str, Any]:
    return (Scripted(model)
            .roles("Cardiologist", "Neurologist", "Pharmacologist", justification=("x", "y", "z"))
            .structured_opinion("DOAC", clinical_data="AF", syndromes="AF", differential_diagnosis="n/a",
                                diagnostic_strategy="d")
            .opinion("Start a DOAC.")
            .synthesis(sections(plan, final_differential="1. AF"), where={"contains": STRUCTURED_REPORT})
            .synthesis(plan)
            .accept()
            .build())


JUDGE = {"model": "judge", "rules": [
    {"stage": "judge", "contains": "Plan from panel-a", "json": {"rationale": "r", "score": 4}},
    {"stage": "judge", "json": {"rationale": "r", "score": 2}}]}


def judged(tmp_path: Path, runs: list[str]) -> Path:
    """One simulate run per entry (the panel model's name), all judged, in one folder."""
    out = tmp_path / "runs"
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps(JUDGE))
    for number, model in enumerate(runs):
        script = tmp_path / f"panel-{number}.json"
        script.write_text(json.dumps(panel(model, f"Plan from {model}.")))
        before = set(out.iterdir()) if out.exists() else set()
        assert main(["simulate", "--case", str(AFIB), "--model", f"scripted:{script}", "--out", str(out)]) == 0
        [run_dir] = set(out.iterdir()) - before
        assert main(["judge", str(run_dir), "--rubric", RUBRIC.name, "--judge-model", f"scripted:{judge}"]) == 0
    return out


def run_ids(folder: Path) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.free-form.judge.otb-conclusion-alignment.json")):
        record = read_judgement(path)
        trace = json.loads((path.parent / record.trace).read_text())
        ids.setdefault(trace["model"], []).append(record.trace_run_id)
    return ids


def pairs_of(tmp_path: Path, folder: Path, rows: str) -> list[tuple[float, float]]:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(HEADER + rows)
    pairs, _ = pair_ratings(load_ratings(ratings, RUBRIC), load_judgements(folder, RUBRIC.name), ratings)
    return [(p.physician, p.judge) for p in pairs]


def test_two_models_of_one_case_are_told_apart_by_the_model_column(tmp_path: Path) -> None:
    folder = judged(tmp_path, ["panel-a", "panel-b"])
    case_id = read_judgement(next(folder.rglob("*.judge.otb-conclusion-alignment.json"))).case_id
    row = f"{case_id},conclusion,conclusion_alignment,r1,5,free-form,{{model}},\n"
    assert pairs_of(tmp_path, folder, row.format(model="panel-a")) == [(5.0, 4.0)]
    assert pairs_of(tmp_path, folder, row.format(model="panel-b")) == [(5.0, 2.0)]
    with pytest.raises(UserError, match=r"ratings.csv: rating of .* matches 2 judged traces \(run .*model panel-a"):
        pairs_of(tmp_path, folder, row.format(model=""))


def test_two_runs_of_one_model_are_told_apart_by_the_run_column(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder = judged(tmp_path, ["panel-a", "panel-a"])
    case_id = read_judgement(next(folder.rglob("*.judge.otb-conclusion-alignment.json"))).case_id
    first, second = run_ids(folder)["panel-a"]
    row = f"{case_id},conclusion,conclusion_alignment,r1,3,free-form,panel-a,{{run}}\n"
    assert pairs_of(tmp_path, folder, row.format(run=first)) == [(3.0, 4.0)]
    assert pairs_of(tmp_path, folder, row.format(run=second)) == [(3.0, 4.0)]
    # without the run, the CLI refuses it in one line naming both runs, and writes nothing
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(HEADER + row.format(run=""))
    capsys.readouterr()  # the judge's progress lines
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(folder),
                 "--rubric", RUBRIC.name, "--bootstrap", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "matches 2 judged traces" in err
    assert first in err and second in err and "add a model, run or variant column" in err
    assert not (folder / "calibration").exists()
