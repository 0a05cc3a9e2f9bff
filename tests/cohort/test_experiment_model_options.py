"""An experiment file's panel models each carry their own prices and request shape (docs/cohorts.md,
"Experiment files"): each model's calls are priced by its own spec, the manifest records them
(``settings.model_options``) and a resume keeps them; how a model is reached stays the first's."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from support.scripts import Scripted

from consilium.cli import build_parser, main
from consilium.cli.cohort_study import study_from_args
from consilium.cohort.plan_resume import resume_plan

PRICES = {"panel-a": {"input": 2.5, "cached_input": 1.25, "output": 10.0},
          "panel-b": {"input": 0.5, "cached_input": 0.5, "output": 1.5}}


def panel(model: str) -> dict[str, Any]:
    return (Scripted(model)
            .roles("Internist", "Neurologist", "Radiologist", justification=("x", "y", "z"))
            .opinion("Opinion of {role}.")
            .synthesis("Report: A.")
            .accept()
            .build())


def write_study(root: Path, *, second: str) -> Path:
    cases = root / "cases"
    cases.mkdir()
    for n in range(2):
        (cases / f"c{n}.json").write_text(json.dumps({
            "id": f"c{n}", "title": f"Case {n}", "kind": "diagnostic", "question": "What is the diagnosis?",
            "presentation": f"Patient {n}: fever.", "reference": {"diagnosis": "Pneumonia"}}))
    for model in PRICES:
        (root / f"{model}.json").write_text(json.dumps(panel(model)))
    experiment = root / "experiment.yaml"
    experiment.write_text(f"""cases: cases
formats: [free-form]
models:
  - {{spec: scripted:panel-a.json, prices: {json.dumps(PRICES['panel-a'])}}}
  - {second}
""")
    return experiment


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _calls(trace: Path) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = json.loads(trace.read_text())["calls"]
    assert calls
    return calls


def test_each_panel_model_is_priced_by_its_own_prices_and_a_resume_keeps_them(tmp_path: Path) -> None:
    second = (f"{{spec: scripted:panel-b.json, prices: {json.dumps(PRICES['panel-b'])}, "
              "token_param: max_completion_tokens, omit_settings: [temperature]}")
    experiment = write_study(tmp_path, second=second)
    assert main(["cohort", "--experiment", str(experiment), "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    rows = read_csv(run_dir / "arms.csv")
    assert {r["model"] for r in rows} == set(PRICES)
    for row in rows:
        assert all(call["prices"] == PRICES[row["model"]] for call in _calls(run_dir / row["trace"])), row
        assert row["cost_usd"] and float(row["cost_usd"]) > 0
    settings = json.loads((run_dir / "manifest.json").read_text())["settings"]
    spec_b = settings["models"][1]
    assert settings["model_options"] == {spec_b: {"token_param": "max_completion_tokens",
                                                  "omit_settings": ["temperature"], "prices": PRICES["panel-b"]}}
    assert settings["model"]["prices"] == PRICES["panel-a"]
    assert settings["model"]["prices_spec"] == settings["models"][0]
    # Interrupted: panel-b's first arm is gone; the resume runs it again with panel-b's own options.
    [victim] = [run_dir / r["trace"] for r in rows if r["model"] == "panel-b" and r["case_id"] == "c0"]
    victim.unlink()
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    assert all(call["prices"] == PRICES["panel-b"] for call in _calls(victim))
    plan = resume_plan(study_from_args(build_parser().parse_args(["cohort", "--resume", str(run_dir)])), run_dir)
    own, first = plan.options_for(spec_b), plan.options_for(settings["models"][0])
    assert (own.token_param, own.omit_settings, own.prices_spec) == ("max_completion_tokens", ("temperature",), spec_b)
    assert first.prices_spec == settings["models"][0] and first.token_param is None


def test_a_model_without_its_own_options_is_as_before(tmp_path: Path) -> None:
    experiment = write_study(tmp_path, second="scripted:panel-b.json")
    assert main(["cohort", "--experiment", str(experiment), "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    assert "model_options" not in json.loads((run_dir / "manifest.json").read_text())["settings"] or \
        json.loads((run_dir / "manifest.json").read_text())["settings"]["model_options"] is None
    for row in read_csv(run_dir / "arms.csv"):
        calls = _calls(run_dir / row["trace"])
        expected = PRICES["panel-a"] if row["model"] == "panel-a" else None  # unpriced, its cost unknown
        assert all(call["prices"] == expected for call in calls), row


@pytest.mark.parametrize(("second", "field"), [
    ('{spec: "scripted:panel-b.json", max_concurrency: 2}', "models.1.max_concurrency"),
    ('{spec: "scripted:panel-b.json", api_key_env: "KEY_B"}', "models.1.api_key_env"),
])
def test_how_a_model_is_reached_stays_the_firsts(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 second: str, field: str) -> None:
    experiment = write_study(tmp_path, second=second)
    assert main(["cohort", "--experiment", str(experiment), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{experiment}: {field}: " in err, err
    assert "may carry only its own prices, token_param, omit_settings" in err
    assert not (tmp_path / "runs").exists()


def test_ray_is_refused_for_models_with_their_own_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    second = f"{{spec: scripted:panel-b.json, prices: {json.dumps(PRICES['panel-b'])}}}"
    experiment = write_study(tmp_path, second=second)
    assert main(["cohort", "--experiment", str(experiment), "--out", str(tmp_path / "runs"), "--ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--ray: panel model" in err and "carries its own options" in err, err
    assert not (tmp_path / "runs").exists()
