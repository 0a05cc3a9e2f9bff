"""The benchmark suite: ratios measured side by side in one run, written to benchmarks/results.md.

    make bench        (or: .venv/bin/python benchmarks/suite.py [--quick])

1. orchestration overhead per model call (consilium graph vs a bare asyncio loop, instant model);
2. concurrency speedup and efficiency against the critical-path bound: the openai backend against
   benchmarks/fakeserver.py, an OpenAI-compatible server in its own process answering in 100 ms;
   1 and 2 measure the default configuration (the response cache on, a fresh cache file for each
   measurement, so every call is a miss that is written) beside the cache off (``--no-cache``);
3. prefix reuse: the share of prompt tokens repeating a prefix already sent for the same case,
   for both formats and the board, beside a role-first layout;
4. replay and re-judge throughput (arms/s) against the original scripted run;
5. peak memory of a 1,000-arm cohort vs a 100-arm one;
7. the share of prompt tokens served from the replicas' prefix caches, one replica vs four;
then `consilium --help` beside `python -c pass` (benchmarks/startup.py), the cohort command run as a process
beside the in-process run of section 2 and the critical-path bound (benchmarks/cohort_process.py), and the
judge's decoding orders side by side (benchmarks/judge_cost.py).
The embedded model's figures come from `consilium models check` and `make demo`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workload import EXAMPLE, PANEL, ROOT, RULES, cases, fake_server, fresh_cache, read_consilium_trace, run_cohort

from consilium import aio
from consilium.cases import load_case
from consilium.graphs.base import RunModels
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.run import run_board
from consilium.graphs.replay import replay_trace
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup, judge_trace
from consilium.models import CallTag, Message, ModelRequest
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.tokens import _encoding
from consilium.models.wrappers import CachedModel


def overhead(n: int) -> dict[str, Any]:
    """Per call: the graph's time over a bare loop's, with the default stack (cache on) and the cache off."""
    with fresh_cache() as path:
        elapsed, traces = aio.run(run_cohort(cases(n), 0.0, 8, cache=path))
    elapsed_off, _ = aio.run(run_cohort(cases(n), 0.0, 8))
    calls = sum(len(t.calls) for t in traces) - n  # the shared assignment is copied, not called, once per case
    model = ScriptedModel(Script(rules=RULES))
    request = ModelRequest(messages=(Message(role="user", content=load_case(EXAMPLE).render()),),
                           tag=CallTag(stage="vote", role="x", round=1))

    async def bare() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(model.generate(request) for _ in range(calls)))
        return time.perf_counter() - started

    baseline = aio.run(bare())
    per_call = (elapsed - baseline) / calls * 1000
    per_call_off = (elapsed_off - baseline) / calls * 1000
    return {"calls": calls, "graph_s": elapsed, "graph_off_s": elapsed_off, "bare_s": baseline,
            "overhead_ms": per_call, "overhead_off_ms": per_call_off, "share_of_100ms": per_call / 100,
            "cache_ms": per_call - per_call_off}


def concurrency(n: int, latency_ms: float) -> list[dict[str, Any]]:
    """The cohort against the fake server (its own process) through the whole openai backend stack, with
    the default configuration (a fresh response cache each time) and the cache off side by side; the
    cache-off run at concurrency 1 is left out (it would double the longest measurement)."""
    rows = []
    base = None
    with fake_server(latency_ms) as url:
        for level in (1, 8, 32, 64):
            with fresh_cache() as path:
                elapsed, traces = aio.run(run_cohort(cases(n), latency_ms, level, url, cache=path))
            elapsed_off = aio.run(run_cohort(cases(n), latency_ms, level, url))[0] if level > 1 else None
            calls = sum(len(t.calls) for t in traces) - n
            # The critical path of one case: the assignment, then (both formats side by side) opinions →
            # synthesis → vote → revision → vote, each step waiting for the one before.
            steps_per_case = 1 + 5
            ideal = max(steps_per_case * latency_ms / 1000, calls * latency_ms / 1000 / level)
            base = base or elapsed
            latencies = [c.latency_ms for t in traces for c in t.calls]
            rows.append({"concurrency": level, "wall_s": elapsed, "speedup": base / elapsed,
                         "efficiency": ideal / elapsed, "calls": calls,
                         "wall_off_s": elapsed_off, "efficiency_off": ideal / elapsed_off if elapsed_off else None,
                         "mean_latency_ms": sum(latencies) / len(latencies)})
    return rows


def _shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def reuse(prompts_by_case: dict[str, list[str]]) -> float:
    encoding = _encoding()
    total = reused = 0
    for prompts in prompts_by_case.values():
        seen: list[list[int]] = []
        for prompt in prompts:
            tokens = encoding.encode(prompt, disallowed_special=())
            reused += max((_shared_prefix(tokens, s) for s in seen), default=0)
            total += len(tokens)
            seen.append(tokens)
    return reused / total if total else 0.0


def prefix_reuse(n: int) -> list[dict[str, Any]]:
    _, traces = aio.run(run_cohort(cases(n), 0.0, 8))
    model = ScriptedModel(Script(rules=RULES))
    boards = [aio.run(run_board(c, "agents", RunModels(model, model), BoardConfig(), run_id="b"))
              for c in cases(n)]
    rows = []
    for label, group in (("consilium free-form", [t for t in traces if t.format == "free-form"]),
                         ("consilium structured", [t for t in traces if t.format == "structured"]),
                         ("board (agents)", boards)):
        case_first: dict[str, list[str]] = {}
        role_first: dict[str, list[str]] = {}
        for trace in group:
            for call in trace.calls:
                system, user = call.messages[0].content, call.messages[1].content
                case_part, _, task = user.partition("\n\nTASK\n")
                case_first.setdefault(trace.case_id, []).append(system + user)
                role_first.setdefault(trace.case_id, []).append(system + "TASK\n" + task + "\n\n" + case_part)
        rows.append({"runs": label, "case_first": reuse(case_first), "role_first": reuse(role_first)})
    return rows


def replay_and_rejudge(n: int) -> dict[str, Any]:
    elapsed, traces = aio.run(run_cohort(cases(n), 0.0, 8))
    started = time.perf_counter()
    for trace in traces:
        aio.run(replay_trace(trace))
    replay = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedModel(ScriptedModel(Script(rules=RULES)), Path(tmp) / "cache.sqlite")
        rubric = load_rubric("otb-conclusion-alignment")

        async def judge_all() -> float:
            started = time.perf_counter()
            await asyncio.gather(*(judge_trace(t, "t", rubric, JudgeSetup(model=cached)) for t in traces))
            return time.perf_counter() - started

        first = aio.run(judge_all())
        again = aio.run(judge_all())
    arms = len(traces)
    return {"arms": arms, "run_arms_s": arms / elapsed, "replay_arms_s": arms / replay,
            "judge_arms_s": arms / first, "rejudge_cached_arms_s": arms / again}


def peak_rss_kb(arms: int, folder: Path) -> int:
    case_dir = folder / f"cases-{arms}"
    case_dir.mkdir()
    source = EXAMPLE.read_text()
    for i in range(arms // 2):
        (case_dir / f"c{i}.yaml").write_text(source.replace("id: diagnostic-myocarditis", f"id: mem-{i:04d}"))
    command = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "consilium", "--log-file", str(folder / "l"),
               "cohort", "--cases", str(case_dir), "--model", f"scripted:{PANEL}", "--concurrency", "16",
               "--out", str(folder / f"runs-{arms}")]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "CONSILIUM_CACHE": "off"})
    return int(done.stderr.strip().splitlines()[-1])


def embedded() -> dict[str, Any]:
    """tokens/s from `models check`; wall time, calls and tokens of one consilium case in both formats."""
    env = {**os.environ, "CONSILIUM_CACHE": "off"}
    check = subprocess.run([sys.executable, "-m", "consilium", "models", "check"], capture_output=True, text=True,
                           env=env, timeout=600)
    rate = next((line.split(",")[-1].strip() for line in check.stdout.splitlines() if line.startswith("total:")),
                "n/a")
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "consilium", "--log-file", f"{tmp}/log", "simulate", "--case",
                        str(EXAMPLE), "--out", tmp], capture_output=True, text=True, env=env, timeout=1200)
        wall = time.perf_counter() - started
        traces = [read_consilium_trace(p) for p in sorted(Path(tmp).glob("*/*.trace.json"))]
    # A shared assignment's calls are copied into the second trace, not made again.
    calls = sum(len(t.calls) - (sum(c.stage == "role_assignment" for c in t.calls) if t.role_assignment_shared
                                else 0) for t in traces)
    tokens = sum(t.usage.total.input_tokens + t.usage.total.output_tokens for t in traces)
    return {"rate": rate, "wall_s": wall, "calls": calls, "tokens": tokens,
            "status": ", ".join(f"{t.format} {t.status}" for t in traces)}


def cache_sections(scale: int) -> list[str]:
    """Sections 1 and 2: the default configuration (cache on, a fresh file each time) beside the cache off.
    ``python -c 'import suite; print(chr(10).join(suite.cache_sections(4)))'`` in benchmarks/ runs them alone."""
    o = overhead(40 // scale)
    lines = ["## 1. Orchestration overhead (instant scripted model)", "",
             "Default configuration: the response cache on, a fresh cache file (every call a miss, written by "
             "the cache's writer thread); beside it the cache off (`--no-cache`).", "",
             "| configuration | consilium graph s | bare asyncio loop s | added per call | share of a 100 ms call |",
             "|---|---|---|---|---|",
             f"| default (cache on) | {o['graph_s']:.2f} | {o['bare_s']:.2f} | **{o['overhead_ms']:.2f} ms** | "
             f"{o['share_of_100ms']:.1%} |",
             f"| cache off | {o['graph_off_s']:.2f} | {o['bare_s']:.2f} | {o['overhead_off_ms']:.2f} ms | "
             f"{o['overhead_off_ms'] / 100:.1%} |", "",
             f"{o['calls']} model calls; the cache adds {o['cache_ms']:.2f} ms per call; default / cache off "
             f"{o['graph_s'] / o['graph_off_s']:.2f}× (target ≤ 5% of a 100 ms call).", ""]
    latency = 100.0
    rows = concurrency(64 // scale, latency)
    lines += [f"## 2. Concurrency ({64 // scale} cases × both formats, {rows[0]['calls']} calls, against "
              f"benchmarks/fakeserver.py answering in {latency:.0f} ms)", "",
              "Default configuration (a fresh response cache for each run) beside the cache off.", "",
              "| concurrency | wall s | speedup vs 1 | efficiency vs critical-path bound | wall s, cache off | "
              "efficiency, cache off | default / cache off | mean call latency seen |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['concurrency']} | {r['wall_s']:.2f} | {r['speedup']:.1f}× | {r['efficiency']:.2f} | "
              + (f"{r['wall_off_s']:.2f} | {r['efficiency_off']:.2f} | {r['efficiency'] / r['efficiency_off']:.2f} | "
                 if r["wall_off_s"] else "— | — | — | ")
              + f"{r['mean_latency_ms']:.0f} ms |" for r in rows]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for a smoke run)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results.md")
    parser.add_argument("--skip-embedded", action="store_true", help="leave out the embedded-model section")
    args = parser.parse_args()
    scale = 4 if args.quick else 1
    started = time.perf_counter()
    lines = ["# Benchmark results", "", f"`benchmarks/suite.py{' --quick' if args.quick else ''}` on "
             f"{os.cpu_count()} CPUs; every figure below was measured side by side in one run.", ""]
    lines += cache_sections(scale)
    lines += __import__("cohort_process").process_section(args.quick)  # beside section 2: the same stand-in
    rows = prefix_reuse(10 // (2 if args.quick else 1))
    lines += ["", "## 3. Prefix reuse (share of prompt tokens repeating a prefix already sent for the case)", "",
              "| runs | case first (consilium's layout) | role and task first |", "|---|---|---|"]
    lines += [f"| {r['runs']} | {r['case_first']:.1%} | {r['role_first']:.1%} |" for r in rows]
    r = replay_and_rejudge(100 // scale)
    lines += ["", f"## 4. Replay and re-judge ({r['arms']} arms)", "",
              f"run {r['run_arms_s']:.1f} arms/s · replay {r['replay_arms_s']:.1f} arms/s · judge "
              f"{r['judge_arms_s']:.1f} arms/s · re-judge from cache {r['rejudge_cached_arms_s']:.1f} arms/s"]
    with tempfile.TemporaryDirectory() as tmp:
        small = peak_rss_kb(100 // scale, Path(tmp))
        large = peak_rss_kb(1000 // scale, Path(tmp))
    lines += ["", "## 5. Memory (peak RSS of a scripted cohort)", "",
              f"{100 // scale} arms: {small / 1024:.0f} MiB · {1000 // scale} arms: {large / 1024:.0f} MiB → "
              f"**ratio {large / small:.2f}** (target < 1.5)", ""]
    if not args.skip_embedded:
        e = embedded()
        lines += ["## 6. Embedded model (SmolLM2-135M, in-process)", "",
                  f"`models check`: {e['rate']}. One consilium case "
                  f"(`simulate --case examples/cases/diagnostic-myocarditis.yaml`, both formats): "
                  f"{e['wall_s']:.0f} s wall, {e['calls']} model calls, {e['tokens']:,} tokens ({e['status']}).", ""]
    from replicas import replica_cache  # benchmarks/replicas.py (it imports this module)

    rows = replica_cache(16 // scale, 32, 4)
    lines += ["## 7. Replica prefix caches (benchmarks/replicas.py: fake vLLM replicas, 16-token block cache)", "",
              "| replicas | cases | calls | spilled off their case's replica | prompt tokens served from cache |",
              "|---|---|---|---|---|"]
    lines += [f"| {r['replicas']} | {r['cases']} | {r['calls']} | {r['spilled']} | {r['cached_share']:.1%} |"
              for r in rows]
    lines += ["", f"Four replicas vs one: {(rows[0]['cached_share'] - rows[-1]['cached_share']) * 100:.1f} points "
              "(target ≤ 5).", ""]
    lines += __import__("ray_vs_local").ray_section(48 // scale)  # 8. benchmarks/ray_vs_local.py
    lines += [] if args.skip_embedded else __import__("embedded").embedded_section(args.quick)  # 9. embedded.py
    lines += __import__("startup").startup_section(args.quick)  # benchmarks/startup.py
    lines += __import__("judge_cost").judge_cost_section(args.quick)  # benchmarks/judge_cost.py
    lines += [f"_Total benchmark time {time.perf_counter() - started:.0f} s._", ""]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
