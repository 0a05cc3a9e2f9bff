"""A judged folder for `calibrate evolve` (two panel models × two formats × four cases), and the bad
inputs of `calibrate evolve` (merged into tests/cli/test_bad_inputs.py): each is one line on stderr and
exit 2, with nothing written.

The panel's final report reads ``Plan <PA|PB>-<FF|ST>.`` (model and format), and each case's text
carries ``casemark-<case>``, so a scripted judge can answer per trace with ``contains_all``.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from consilium.cli import main
from support.scripts import STRUCTURED_REPORT, Scripted, sections

ROOT = Path(__file__).resolve().parents[2]
AFIB = ROOT / "examples" / "cases" / "consultation-afib-anticoagulation.yaml"
MODELS = {"panel-a": "PA", "panel-b": "PB"}
FORMATS = {"free-form": "FF", "structured": "ST"}
CASES = ("e1", "e2", "e3", "e4")
HEADER = "case_id,component,criterion,rater,score,model,format\n"

Builder = Callable[[Path], tuple[list[str], str]]


def mark(model: str, fmt: str) -> str:
    """The text a (model, format) trace's conclusion carries."""
    return f"Plan {MODELS[model]}-{FORMATS[fmt]}."


def _panel(model: str) -> dict[str, Any]:
    return (Scripted(model)
            .roles("Cardiologist", "Neurologist", "Pharmacologist", justification=("x", "y", "z"))
            .structured_opinion("DOAC", clinical_data="AF", syndromes="AF", differential_diagnosis="n/a",
                                diagnostic_strategy="d")
            .opinion("Start a DOAC.")
            .synthesis(sections(mark(model, "structured"), final_differential="1. AF"),
                       where={"contains": STRUCTURED_REPORT})
            .synthesis(mark(model, "free-form"))
            .accept()
            .build())


def build_judged(tmp: Path, judge_rules: list[dict[str, Any]] | None = None) -> Path:
    """Every (model, case) simulated in both formats and judged on the conclusion (ai-consilium, a
    judge answering by ``judge_rules`` first, else scoring 2); returns the folder holding the runs."""
    out = tmp / "runs"
    base = yaml.safe_load(AFIB.read_text())
    judge = tmp / "first-judge.json"
    judge.write_text(json.dumps({"model": "first-judge", "rules": [
        *(judge_rules or []), {"stage": "judge", "json": {"rationale": "r", "score": 2}}]}))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for model in MODELS:
            script = tmp / f"{model}.json"
            script.write_text(json.dumps(_panel(model)))
            for case in CASES:
                case_file = tmp / "cases" / f"{case}.yaml"
                case_file.parent.mkdir(exist_ok=True)
                case_file.write_text(yaml.safe_dump({**base, "id": case,
                                                     "presentation": f"{base['presentation']} casemark-{case}."}))
                assert main(["simulate", "--case", str(case_file), "--model", f"scripted:{script}",
                             "--out", str(out)]) == 0
        assert main(["judge", str(out), "--rubric", "ai-consilium", "--judge-model", f"scripted:{judge}",
                     "--component", "conclusion"]) == 0
    return out


def write_scripts(tmp: Path, judge_rules: list[dict[str, Any]] | None = None) -> tuple[str, str]:
    """The evolve judge (``STRICT`` instructions score 1, others 3, after ``judge_rules``) and an
    optimiser whose first rewrite in each repeat is lenient and whose later ones are STRICT."""
    judge = tmp / "judge.json"
    judge.write_text(json.dumps({"model": "judge", "rules": [
        *(judge_rules or []),
        {"stage": "judge", "contains": "STRICT", "json": {"rationale": "strict", "score": 1}},
        {"stage": "judge", "json": {"rationale": "lenient", "score": 3}}]}))
    optimiser = tmp / "optimiser.json"
    answers = [{"instruction": "Judge the factual grounding carefully against the case."},
               {"instruction": "STRICT: give 1 unless every fact is grounded in the case."}]
    optimiser.write_text(json.dumps({"model": "optimiser", "rules": [
        {"stage": "calibration", "seed": seed, "responses": answers} for seed in range(10)]}))
    return f"scripted:{judge}", f"scripted:{optimiser}"


def evolve_argv(ratings: Path, judgements: Path, judge: str, optimiser: str, *extra: str) -> list[str]:
    return ["calibrate", "evolve", "--ratings", str(ratings), "--judgements", str(judgements), "--rubric",
            "ai-consilium", "--judge-model", judge, "--optimiser-model", optimiser, "--criterion", "c1",
            "--population", "2", "--generations", "1", *extra]


def _bad(tmp: Path, header: str, rows: str) -> list[str]:
    judged = build_judged(tmp)
    ratings = tmp / "ratings.csv"
    ratings.write_text(header + rows)
    judge, optimiser = write_scripts(tmp)
    return evolve_argv(ratings, judged, judge, optimiser, "--repeats", "1")


CORPUS: dict[str, Builder] = {
    "evolve rating of two models' traces": lambda t: (_bad(t, "case_id,component,criterion,rater,score,format\n",
                                                           "e1,conclusion,c1,a,1,structured\n"),
                                                      "matches 2 judged traces"),
    "evolve rating with format and variant disagreeing": lambda t: (_bad(
        t, "case_id,component,criterion,rater,score,model,format,variant\n",
        "e1,conclusion,c1,a,1,panel-a,structured,free-form\n"), "format: 'structured' disagrees with variant"),
    "evolve criterion rated on one case": lambda t: (_bad(t, HEADER, "e1,conclusion,c1,a,1,panel-a,structured\n"
                                                                     "e1,conclusion,c1,a,1,panel-b,free-form\n"),
                                                     "rated on 1 case only"),
}
