"""``cohort --resume`` builds the models with the options the cohort ran with: the manifest records the
prices and the reasoning-model request shape (``token_param``, ``omit_settings``), so an arm a resume runs
is priced as the others were and sends the same requests (docs/cohorts.md, "Resuming")."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import build_parser, main
from consilium.cli.cohort_study import study_from_args
from consilium.cohort.plan_resume import resume_plan
from consilium.models.pricing import Prices

PRICES = {"input": 2.5, "cached_input": 1.25, "output": 10.0}
PANEL = {"model": "priced-panel", "rules": [
    {"stage": "role_assignment", "json": {"primary": {"label": "Internist", "justification": "x"}, "supporting": [
        {"label": "Neurologist", "justification": "y"}, {"label": "Radiologist", "justification": "z"}]}},
    {"stage": "opinion", "response": "Opinion of {role}."},
    {"stage": "synthesis", "response": "Report: A."},
    {"stage": "vote", "json": {"vote": "accept", "reason": "ok", "requested_change": None}},
]}


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _cases(root: Path) -> Path:
    cases = root / "cases"
    cases.mkdir()
    for n in range(3):
        (cases / f"c{n}.json").write_text(json.dumps({
            "id": f"c{n}", "title": f"Case {n}", "kind": "diagnostic", "question": "What is the diagnosis?",
            "presentation": f"Patient {n}: fever and cough.", "reference": {"diagnosis": "Pneumonia"}}))
    return cases


def _interrupted(tmp_path: Path, *start: str) -> tuple[Path, Path]:
    """A finished cohort with one arm's trace gone, as if the process had been killed before it finished."""
    assert main(["cohort", *start, "--formats", "free-form", "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    victim = sorted(run_dir.glob("arms/*/*/*.trace.json"))[0]
    victim.unlink()
    return run_dir, victim


def _calls(trace: Path) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = json.loads(trace.read_text())["calls"]
    assert calls
    return calls


@pytest.fixture
def model_config(tmp_path: Path) -> Path:
    script = tmp_path / "panel.json"
    script.write_text(json.dumps(PANEL))
    config = tmp_path / "panel.yaml"
    config.write_text(f"spec: scripted:{script}\nprices: {json.dumps(PRICES)}\n"
                      "token_param: max_completion_tokens\nomit_settings: [temperature, top_p]\n")
    return config


def test_a_resumed_arm_keeps_the_prices_and_the_request_shape(tmp_path: Path, model_config: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    run_dir, victim = _interrupted(tmp_path, "--cases", str(_cases(tmp_path)), "--model-config", str(model_config))
    model = json.loads((run_dir / "manifest.json").read_text())["settings"]["model"]
    assert model["prices"] == PRICES and model["prices_spec"].endswith("panel.json")
    assert (model["token_param"], model["omit_settings"]) == ("max_completion_tokens", ["temperature", "top_p"])
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    assert "3 arms (3 completed, 0 failed, 2 resumed)" in capsys.readouterr().out
    assert all(call["prices"] == PRICES for call in _calls(victim))  # run again by the resume: still priced
    rows = read_csv(run_dir / "arms.csv")
    [rerun] = [r for r in rows if r["resumed"] == "False"]
    assert (run_dir / rerun["trace"]).resolve() == victim.resolve()
    assert all(r["cost_usd"] and float(r["cost_usd"]) > 0 for r in rows)
    # What the resume builds its models with: the options that have no flag come from the manifest.
    plan = resume_plan(study_from_args(build_parser().parse_args(["cohort", "--resume", str(run_dir)])), run_dir)
    assert plan.options.prices == Prices(**PRICES) and plan.options.prices_spec == model["prices_spec"]
    assert (plan.options.token_param, plan.options.omit_settings) == ("max_completion_tokens", ("temperature", "top_p"))


def test_a_resume_refuses_another_token_param(tmp_path: Path, model_config: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    run_dir, _ = _interrupted(tmp_path, "--cases", str(_cases(tmp_path)), "--model-config", str(model_config))
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir), "--token-param", "max_tokens"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--token-param: 'max_tokens' differs from the resumed cohort's" in err, err
    assert main(["cohort", "--resume", str(run_dir), "--token-param", "max_completion_tokens"]) == 0


def test_a_manifest_without_the_options_resumes_unpriced(tmp_path: Path, model_config: Path) -> None:
    """A manifest written before these fields: the models are built as the defaults say (no prices)."""
    run_dir, victim = _interrupted(tmp_path, "--cases", str(_cases(tmp_path)), "--model-config", str(model_config))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for key in ("prices", "prices_spec", "token_param", "omit_settings"):
        del manifest["settings"]["model"][key]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    assert all(call["prices"] is None for call in _calls(victim))


def test_the_first_experiment_models_prices_price_its_calls_and_survive_a_resume(tmp_path: Path) -> None:
    _cases(tmp_path)
    (tmp_path / "panel.json").write_text(json.dumps(PANEL))
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(f"cases: cases\nmodels:\n  - {{spec: scripted:panel.json, prices: {json.dumps(PRICES)}}}\n")
    run_dir, victim = _interrupted(tmp_path, "--experiment", str(experiment))
    kept = [p for p in run_dir.glob("arms/*/*/*.trace.json")]
    assert kept and all(call["prices"] == PRICES for path in kept for call in _calls(path))
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    assert all(call["prices"] == PRICES for call in _calls(victim))
