"""Wall time of `calibrate evolve` with scripted judge and optimiser models on N cases (default 110).

    .venv/bin/python benchmarks/evolve_scripted.py [--cases 110] [--criteria c1,c2]

Builds N scripted consilium traces, judges them with a scripted judge whose score depends on
whether its instructions say STRICT (1) or not (3), writes ratings of 1 from one physician, and
times `calibrate evolve` (population 4, 3 generations, 3 repeats) with a scripted optimiser whose
initial rewrites are lenient and whose edits from disagreements are STRICT. The framework's own
cost, with no model latency.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from consilium.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]


def run(argv: list[str], log: Path) -> None:
    code = cli(["--log-file", str(log), *argv])
    if code != 0:
        raise SystemExit(f"{argv[0]} failed with exit {code}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=110)
    parser.add_argument("--criteria", default="c1,c2,c3,c4,c5,c6,c7,c8")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log = folder / "log.jsonl"
        panel, judge, optimiser = folder / "panel.json", folder / "judge.json", folder / "optimiser.json"
        panel.write_text(json.dumps({"rules": [
            {"stage": "role_assignment", "json": {"primary": {"label": "Cardiologist", "justification": "x"},
                                                  "supporting": [{"label": "Neurologist", "justification": "y"}]}},
            {"stage": "opinion", "response": "Myocarditis."}, {"stage": "synthesis", "response": "Myocarditis."},
            {"stage": "vote", "json": {"vote": "accept", "reason": "ok", "requested_change": None}}]}))
        judge.write_text(json.dumps({"rules": [
            {"stage": "judge", "contains": "STRICT", "json": {"rationale": "strict", "score": 1}},
            {"stage": "judge", "json": {"rationale": "lenient", "score": 3}}]}))
        # Initial rewrites (made before any disagreement is known) stay lenient; edits made from
        # recorded disagreements turn STRICT.
        optimiser.write_text(json.dumps({"rules": [
            {"stage": "calibration", "contains": "(none recorded)",
             "json": {"instruction": "Judge this criterion carefully against the case."}},
            {"stage": "calibration", "json": {"instruction": "STRICT: give 1 unless the criterion is fully met."}}]}))
        source = (ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml").read_text()
        run_dir = folder / "run"
        run_dir.mkdir()
        started = time.perf_counter()
        for n in range(args.cases):
            case = folder / f"case-{n:03d}.yaml"
            case.write_text(source.replace("id: diagnostic-myocarditis", f"id: case-{n:03d}"))
            run(["simulate", "--case", str(case), "--model", f"scripted:{panel}", "--format", "free-form",
                 "--min-roles", "2", "--out", str(folder / "runs")], log)
        for trace in (folder / "runs").glob("*/*.trace.json"):
            trace.rename(run_dir / trace.name)
        run(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", f"scripted:{judge}",
             "--component", "conclusion"], log)
        setup = time.perf_counter() - started
        criteria = args.criteria.split(",")
        ratings = folder / "ratings.csv"
        ratings.write_text("case_id,component,criterion,rater,score\n" + "".join(
            f"case-{n:03d},conclusion,{c},dr-a,1\n" for n in range(args.cases) for c in criteria))
        started = time.perf_counter()
        run(["calibrate", "evolve", "--ratings", str(ratings), "--judgements", str(run_dir), "--rubric",
             "ai-consilium", "--judge-model", f"scripted:{judge}", "--optimiser-model", f"scripted:{optimiser}",
             *[f"--criterion={c}" for c in criteria]], log)
        evolve = time.perf_counter() - started
    print(f"{args.cases} cases: traces and judgements built in {setup:.1f} s; "
          f"evolve of {len(criteria)} criteria (population 4, 3 generations, 3 repeats) took {evolve:.1f} s")


if __name__ == "__main__":
    main()
