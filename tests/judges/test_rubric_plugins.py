"""Rubric plugins: a package installed beside consilium adds a rubric through the ``consilium.rubrics``
entry points, and ``--rubric NAME`` finds it in judge, cohort --judge and calibrate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_judges import CASES, JUDGE, PANEL, run_panel

from consilium.judges.record import Judgement

RUBRIC_YAML = """\
name: demo-brevity
version: 1
title: Demo brevity (a plugin's rubric)
source: tests/judges/test_rubric_plugins.py
scoring: single
scale: [1, 2, 3]
not_evaluable: false
reference: none
instructions: Score how briefly the candidate states its conclusion.
criteria:
  - id: brevity
    name: Brevity
    definition: How briefly the conclusion is stated.
    components: [conclusion]
"""

PACKAGE = """\
from pathlib import Path

RUBRIC = str(Path(__file__).with_name("demo-brevity.yaml"))


def made():
    import yaml

    data = yaml.safe_load(Path(RUBRIC).read_text())
    return {**data, "name": "demo-made"}


def broken():
    raise RuntimeError("the plugin's rubric server is down")
"""

ENTRY_POINTS = """\
[consilium.rubrics]
demo-brevity = consilium_rubric_demo:RUBRIC
demo-made = consilium_rubric_demo:made
demo-broken = consilium_rubric_demo:broken
demo-missing = consilium_rubric_demo.nowhere:RUBRIC
"""


def install_plugin(root: Path) -> Path:
    """A tiny distribution written as an installed one (its dist-info beside the package), so
    importlib.metadata finds its entry points on PYTHONPATH."""
    site = root / "site"
    package = site / "consilium_rubric_demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PACKAGE)
    (package / "demo-brevity.yaml").write_text(RUBRIC_YAML)
    info = site / "consilium_rubric_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: consilium-rubric-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "RECORD").write_text("".join(f"{p},,\n" for p in (
        "consilium_rubric_demo/__init__.py", "consilium_rubric_demo/demo-brevity.yaml",
        "consilium_rubric_demo-0.1.dist-info/METADATA", "consilium_rubric_demo-0.1.dist-info/entry_points.txt",
        "consilium_rubric_demo-0.1.dist-info/RECORD")))
    return site


def consilium(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "consilium", *argv], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def scripted(tmp_path: Path, name: str, script: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(script))
    return f"scripted:{path}"


BRIEF = {"model": "scripted-judge", "rules": [{"stage": "judge", "json": {"rationale": "short", "score": 3}}]}


def test_a_plugin_rubric_judges_a_real_trace(tmp_path: Path) -> None:
    site, run_dir = install_plugin(tmp_path), run_panel(tmp_path)
    done = consilium(site, "judge", str(run_dir), "--rubric", "demo-brevity",
                     "--judge-model", scripted(tmp_path, "judge.json", BRIEF))
    assert done.returncode == 0, done.stderr
    judgements = {p.name.split(".")[1]: Judgement.model_validate_json(p.read_text())
                  for p in run_dir.glob("*.judge.demo-brevity.json")}
    assert set(judgements) == {"free-form", "structured"}
    for judgement in judgements.values():
        assert judgement.rubric == "demo-brevity" and judgement.rubric_source == "tests/judges/test_rubric_plugins.py"
        assert judgement.aggregates == {"conclusion": {"items": 1, "not_evaluable": 0, "score": 3.0}}
        [call] = judgement.calls
        assert "Demo brevity (a plugin's rubric)" in call.messages[0].content
    # A callable entry point giving the rubric's data works the same.
    done = consilium(site, "judge", str(run_dir), "--rubric", "demo-made",
                     "--judge-model", scripted(tmp_path, "judge.json", BRIEF))
    assert done.returncode == 0, done.stderr
    assert len(list(run_dir.glob("*.judge.demo-made.json"))) == 2


def test_a_cohort_judges_with_a_plugin_rubric(tmp_path: Path) -> None:
    site, cases = install_plugin(tmp_path), tmp_path / "cases"
    cases.mkdir()
    (cases / "afib.yaml").write_text((CASES / "consultation-afib-anticoagulation.yaml").read_text())
    done = consilium(site, "cohort", "--cases", str(cases), "--model", scripted(tmp_path, "panel.json", PANEL),
                     "--formats", "free-form", "--judge", "demo-brevity", "--judge-model",
                     scripted(tmp_path, "judge.json", BRIEF), "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    [run_dir] = list((tmp_path / "runs").iterdir())
    rows = (run_dir / "judgements.csv").read_text().splitlines()
    assert len(rows) == 2 and ",demo-brevity,conclusion,brevity,3" in rows[1]


def test_unknown_and_broken_plugin_rubrics_are_one_line_errors(tmp_path: Path) -> None:
    site, run_dir = install_plugin(tmp_path), run_panel(tmp_path)
    judge = scripted(tmp_path, "judge.json", JUDGE)
    unknown = consilium(site, "judge", str(run_dir), "--rubric", "nope", "--judge-model", judge)
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines()[-1].endswith(
        "--rubric: unknown rubric 'nope' (built-in: ai-consilium, nmb-diagnosis-match, npc-signed-criteria, "
        "otb-clinical-equivalence, otb-conclusion-alignment, otb-consistency, otb-four-decision; plugins: "
        "demo-brevity, demo-broken, "
        "demo-made, demo-missing; or a rubric YAML file)")
    broken = consilium(site, "judge", str(run_dir), "--rubric", "demo-broken", "--judge-model", judge)
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    assert ("--rubric: rubric plugin 'demo-broken' (entry point 'consilium_rubric_demo:broken' in group "
            "consilium.rubrics): raised RuntimeError: the plugin's rubric server is down") in broken.stderr
    missing = consilium(site, "calibrate", "agreement", "--rubric", "demo-missing", "--ratings", "r.csv",
                        "--judgements", str(run_dir))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "rubric plugin 'demo-missing'" in missing.stderr and "cannot be loaded (ModuleNotFoundError" in \
        missing.stderr
    cohort = consilium(site, "cohort", "--cases", str(CASES), "--model", judge, "--judge", "demo-broken",
                       "--judge-model", judge, "--out", str(tmp_path / "runs"))
    assert cohort.returncode == 2 and "--judge: rubric plugin 'demo-broken'" in cohort.stderr
