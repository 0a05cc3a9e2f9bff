"""Scripted cohorts for the studio's benchmark (benchmarks/serve_bench.py), made by the real `consilium cohort`.

    .venv/bin/python benchmarks/serve_cohorts.py 80 1000      # make (or find) them; prints each folder

A cohort of ARMS arms is ARMS / 4 cases × two scripted panel models × both formats, judged by a scripted
ai-consilium judge, so its index has scores. The cases are the five shipped examples (examples/cases/) written
again under distinct ids, each with a marker naming its group (``ZQGRP0`` … ``ZQGRP6``) in its presentation; the
scripted rules (the scripted backend's file format, docs/models.md; tests/support/scripts.py builds the same)
match on the markers, so the cohort is varied the way a real one is:

- ``scripted-panel`` is the shipped panel (examples/models/scripted-panel.yaml) as it is;
- ``panel-b`` is the same panel with rules put first: its free-form texts say "panel B"; in group 1 the radiologist
  dissents twice, in group 2 the neurologist dissents in every round (the round limit); in group 5 its structured
  synthesis fails, so those arms fail (shown in red by the studio);
- the judge scores by group (and one more on panel B's free-form arms) and finds c6 of group 4's conclusions not
  evaluable; the three cases without a reference diagnosis (the rubric's reference) are judged with
  ``--allow-missing-reference``, as a user would.

Cohorts are cached in benchmarks/.cache/serve-cohorts/ (git ignores it), keyed by the arm count and
:data:`VERSION`; the time `consilium cohort` took is kept beside each (``made.json``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "benchmarks" / ".cache" / "serve-cohorts"
EXAMPLES = ROOT / "examples" / "cases"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
#: Changed whenever what a cohort holds changes: a cached cohort of another version is made again.
VERSION = 1
GROUPS = 7
FAILING_GROUP = 5


def marker(group: int) -> str:
    return f"ZQGRP{group}"


def write_cases(folder: Path, count: int) -> list[str]:
    """``count`` cases in ``folder``: the shipped examples in turn, each under its own id and group marker."""
    folder.mkdir(parents=True)
    examples = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(EXAMPLES.glob("*.yaml"))]
    ids = []
    for i in range(count):
        case = dict(examples[i % len(examples)])
        case["id"] = f"{case['id']}-{i:04d}"
        case["presentation"] = f"{case['presentation']} (Patient {i}, {marker(i % GROUPS)}.)"
        (folder / f"{case['id']}.json").write_text(json.dumps(case), encoding="utf-8")
        ids.append(case["id"])
    return ids


def panel_b() -> dict[str, Any]:
    """The shipped panel with its free-form texts saying "panel B", and rules put first: dissent, a round limit,
    failures."""
    shipped = yaml.safe_load(PANEL.read_text(encoding="utf-8"))
    first: list[dict[str, Any]] = [
        {"stage": "synthesis", "contains_all": [marker(FAILING_GROUP), '"final_opinion"'], "fail": "model"},
        *({"stage": "vote", "role": role, "round": rnd, "contains": marker(1),
           "json": {"vote": "dissent", "reason": f"round {rnd}: the imaging is incomplete",
                    "requested_change": "add cardiac MRI"}} for role in ("radiologist", "radiology") for rnd in (1, 2)),
        *({"stage": "vote", "role": role, "contains": marker(2),
           "json": {"vote": "dissent", "reason": "the plan ignores the neurological signs",
                    "requested_change": "add a neurological work-up"}} for role in ("neurologist", "neurology")),
    ]
    # The shipped free-form rules (no filter but the stage) answered in panel B's words.
    free_form: dict[str, dict[str, Any]] = {
        "opinion": {"response": "Panel B, opinion of {role}: A is most likely; B and C are possible."},
        "synthesis": {"response": "Report (panel B): A is most likely; B is possible."},
        "revision": {"json": {"changed": True, "change_summary": "work-up added",
                              "report": "Report (panel B): A; work-up added in round {round}."}}}
    rules = []
    for rule in shipped["rules"]:
        if set(rule) - {"json", "response"} == {"stage"} and rule["stage"] in free_form:
            rule = {"stage": rule["stage"], **free_form[rule["stage"]]}
        rules.append(rule)
    return {**shipped, "model": "panel-b", "rules": [*first, *rules]}


def judge() -> dict[str, Any]:
    """The ai-consilium judge: scores by group, one higher on panel B's free-form arms, c6 of group 4 not evaluable."""
    rules: list[dict[str, Any]] = [
        {"stage": "judge", "role": "conclusion:c6", "contains": marker(4),
         "json": {"rationale": "the conclusion cannot be checked", "score": "not_evaluable"}}]
    for group in range(GROUPS):
        rules.append({"stage": "judge", "contains_all": [marker(group), "panel B"],
                      "json": {"rationale": f"group {group}, panel B", "score": (group + 1) % 4}})
        rules.append({"stage": "judge", "contains": marker(group),
                      "json": {"rationale": f"group {group}", "score": group % 4}})
    rules.append({"stage": "judge", "json": {"rationale": "ok", "score": 2}})
    return {"model": "bench-judge", "rules": rules}


def make(arms: int, into: Path, concurrency: int = 32) -> tuple[Path, float]:
    """Run `consilium cohort` for a cohort of ``arms`` arms under ``into``; its run folder and the seconds taken."""
    if arms % 4:
        raise SystemExit(f"arms: {arms} is not a multiple of 4 (cases × 2 models × 2 formats)")
    write_cases(into / "cases", arms // 4)
    (into / "panel-b.json").write_text(json.dumps(panel_b()), encoding="utf-8")
    (into / "judge.json").write_text(json.dumps(judge()), encoding="utf-8")
    argv = [sys.executable, "-m", "consilium", "--log-file", str(into / "cohort.log.jsonl"), "cohort",
            "--cases", str(into / "cases"), "--model", f"scripted:{PANEL}", "--extra-model",
            f"scripted:{into / 'panel-b.json'}", "--judge", "ai-consilium", "--judge-model",
            f"scripted:{into / 'judge.json'}", "--allow-missing-reference", "--concurrency", str(concurrency),
            "--out", str(into / "runs")]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "CONSILIUM_CACHE": "off"})
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: some arms failed, as they are meant to
        raise SystemExit(f"consilium cohort exited {done.returncode}: {done.stderr[-2000:]}")
    [run_dir] = [p for p in (into / "runs").iterdir() if p.is_dir()]
    return run_dir, seconds


def cohort(arms: int, *, concurrency: int = 32, say: Any = print) -> tuple[Path, float]:
    """The cached cohort of ``arms`` arms (made on first use): its run folder and the seconds making it took."""
    home = CACHE / f"v{VERSION}-{arms}"
    made = home / "made.json"
    if made.is_file():
        record = json.loads(made.read_text(encoding="utf-8"))
        return Path(record["run_dir"]), float(record["seconds"])
    shutil.rmtree(home, ignore_errors=True)
    say(f"making the {arms}-arm cohort with consilium cohort (--concurrency {concurrency}) …")
    run_dir, seconds = make(arms, home, concurrency)
    made.write_text(json.dumps({"run_dir": str(run_dir), "seconds": seconds, "arms": arms}), encoding="utf-8")
    say(f"  {run_dir} in {seconds:.0f} s")
    return run_dir, seconds


def main(argv: list[str]) -> None:
    for arms in map(int, argv or ["80", "1000"]):
        run_dir, seconds = cohort(arms)
        print(f"{arms} arms: {run_dir} (consilium cohort took {seconds:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
