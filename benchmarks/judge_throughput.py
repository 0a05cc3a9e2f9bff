"""Judge throughput: judgements (judge items) per second with the scripted judge and the embedded
model, and the share of not-evaluable outcomes, on one structured consilium trace.

    .venv/bin/python benchmarks/judge_throughput.py [--rubric ai-consilium] [--component conclusion]

Both judges score the same trace in the same run; the ratio of their rates is
the cost of a real (if tiny) model next to the framework's own overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from consilium.cli import main as cli
from consilium.graphs.registry import read_trace
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup, judge_trace
from consilium.models import GenerationSettings
from consilium.models.backends.scripted import Script, ScriptedModel, ScriptRule
from consilium.models.factory import ModelOptions, build_model

ROOT = Path(__file__).resolve().parents[1]
PANEL = {"rules": [
    {"stage": "role_assignment", "json": {"primary": {"label": "Cardiologist", "justification": "troponin"},
                                          "supporting": [{"label": "Radiologist", "justification": "MRI"},
                                                         {"label": "Infectious disease specialist",
                                                          "justification": "viral prodrome"}]}},
    {"stage": "opinion", "json": {"clinical_data": "Troponin rise, normal coronaries, viral prodrome.",
                                  "syndromes": "Acute myocardial injury.",
                                  "differential_diagnosis": "1. Myocarditis 2. Pericarditis 3. ACS",
                                  "diagnostic_strategy": "Cardiac MRI.", "management_strategy": "Admit, monitor.",
                                  "final_conclusion": "Acute viral myocarditis is most likely."}},
    {"stage": "synthesis", "json": {"final_opinion": "Acute viral myocarditis.",
                                    "summary": "Young man, chest pain after a viral illness, troponin rise.",
                                    "final_differential": "1. Acute myocarditis\n2. Pericarditis\n3. ACS",
                                    "diagnostic_plan": "Cardiac MRI within 48 h.",
                                    "management_plan": "Admit with rhythm monitoring; no sport for 3-6 months.",
                                    "safety_warnings": "Arrhythmia; heart failure."}},
    {"stage": "vote", "json": {"vote": "accept", "reason": "agree", "requested_change": None}}]}


def make_trace(folder: Path) -> Path:
    script = folder / "panel.json"
    script.write_text(json.dumps(PANEL))
    case = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
    code = cli(["--log-file", str(folder / "log.jsonl"), "simulate", "--case", str(case), "--model",
                f"scripted:{script}", "--out", str(folder / "runs"), "--format", "structured"])
    if code != 0:
        sys.exit(f"could not make the trace (exit {code})")
    return next((folder / "runs").glob("*/*.trace.json"))


async def rate(setup: JudgeSetup, trace_path: Path, rubric: str, components: list[str]) -> tuple[float, int, int]:
    trace = read_trace(trace_path)
    started = time.perf_counter()
    judgement = await judge_trace(trace, trace_path.name, load_rubric(rubric), setup, components)
    elapsed = time.perf_counter() - started
    await setup.model.aclose()
    items = len(judgement.items)
    return items / elapsed, items, sum(i.not_evaluable for i in judgement.items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rubric", default="ai-consilium")
    parser.add_argument("--component", action="append", default=None)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    components = args.component or ["conclusion"]
    with tempfile.TemporaryDirectory() as tmp:
        trace = make_trace(Path(tmp))
        scripted = ScriptedModel(Script(rules=[ScriptRule(stage="judge", json={"rationale": "ok", "score": 2})]))
        settings = GenerationSettings(temperature=0.0, seed=0, max_tokens=args.max_tokens)
        s_rate, s_items, _ = asyncio.run(rate(JudgeSetup(model=scripted, settings=settings), trace, args.rubric,
                                              components))
        embedded = build_model("embedded", ModelOptions(cache=False))
        e_rate, e_items, e_ne = asyncio.run(rate(JudgeSetup(model=embedded, settings=settings), trace, args.rubric,
                                                 components))
    print(f"rubric {args.rubric}, components {components}, {s_items} judgements per trace")
    print(f"scripted judge:  {s_rate:8.2f} judgements/s")
    print(f"embedded judge:  {e_rate:8.3f} judgements/s  (not evaluable: {e_ne}/{e_items} = {e_ne / e_items:.0%})")
    print(f"ratio scripted/embedded: {s_rate / e_rate:.0f}x")


if __name__ == "__main__":
    main()
