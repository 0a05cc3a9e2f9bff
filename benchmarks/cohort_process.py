"""The cohort command as a process, beside the in-process run and the critical-path bound, side by side.

    .venv/bin/python benchmarks/cohort_process.py [--cases 48] [--latency-ms 100] [--concurrency 64]

``python -m consilium cohort`` runs as users run it (a fresh interpreter, the case files read from a
folder, traces, tables and the manifest written, the progress lines printed) against benchmarks/fakeserver.py,
an OpenAI-compatible stand-in answering every request in ``--latency-ms``: once in the default
configuration (the response cache on, a fresh cache file, so every call is a miss that is written) and
once with ``--no-cache``. Beside them, the same cases through benchmarks/workload.py's in-process runner
(the model stack and the protocol's graphs, no files), and the critical-path bound: the larger of the
longest chain of calls that must follow one another (a case's role assignment, then its longest arm's
stages, one (stage, round) after another) and all calls spread over the concurrency, each times the latency.
Everything is measured in one run, so the machine's load falls on all alike: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml
from workload import ROOT, cases, fake_server, fresh_cache, read_consilium_trace, run_cohort

from consilium import aio
from consilium.cases.loader import load_case
from consilium.traces.schema import TraceBase

__all__ = ["bound_seconds", "process_section"]


def write_cases(folder: Path, n: int) -> Path:
    """The benchmark's cases (the shipped example, each patient's presentation its own) as case files."""
    folder.mkdir(parents=True, exist_ok=True)
    for case in cases(n):
        data = case.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        (folder / f"{case.id}.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return folder


def chain(traces: list[Any]) -> int:
    """The longest run of calls that must wait for one another: per case, its shared role assignment, then
    the longest of its arms' chains of (stage, round) steps (a step's calls go out together)."""
    by_case: dict[str, int] = defaultdict(int)
    for trace in traces:
        steps = {(c.stage, c.round) for c in trace.calls if c.stage != "role_assignment"}
        by_case[trace.case_id] = max(by_case[trace.case_id], len(steps))
    return 1 + max(by_case.values())


def calls_made(traces: list[Any]) -> int:
    """Calls sent to the server: a consilium's second format copies the shared assignment's call."""
    shared = sum(sum(c.stage == "role_assignment" for c in t.calls) for t in traces
                 if getattr(t, "role_assignment_shared", False))
    return sum(len(t.calls) for t in traces) - shared


def bound_seconds(traces: list[Any], latency_ms: float, concurrency: int) -> dict[str, float]:
    calls = calls_made(traces)
    steps = chain(traces)
    return {"calls": calls, "chain": steps, "chain_s": steps * latency_ms / 1000,
            "spread_s": calls * latency_ms / 1000 / concurrency,
            "bound_s": max(steps * latency_ms / 1000, calls * latency_ms / 1000 / concurrency)}


def installed_env(tmp: Path) -> dict[str, str]:
    """The environment of an installed package: modules read from bytecode, written by a first, unmeasured
    run (:func:`measure`) into ``tmp``'s folder of its own, so the checkout stays as it is and a machine that
    says not to write bytecode (``PYTHONDONTWRITEBYTECODE``) does not compile every module at every start."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "CONSILIUM_LOG_FILE")}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


#: Runs ``python -m consilium`` (the rest of the command line) and writes, as JSON to the file named first, the
#: epoch seconds of its first connection (its first call: nothing else connects) and of the end of its exit
#: functions (this one, registered first, runs last); the parent measures when the process is gone.
_TIMELINE = """
import atexit, json, runpy, sys, time
out = sys.argv.pop(1)
marks = {}
def hook(event, args):
    if event == "socket.connect" and "first_call" not in marks:
        marks["first_call"] = time.time()
sys.addaudithook(hook)
atexit.register(lambda: open(out, "w").write(json.dumps({**marks, "exit_functions_done": time.time()})))
sys.argv[0] = "consilium"
runpy.run_module("consilium", run_name="__main__", alter_sys=True)
"""


def run_process(folder: Path, case_dir: Path, url: str, concurrency: int, *, cache: bool,
                profile: Path | None = None,
                tree: Path = ROOT) -> tuple[float, float, list[TraceBase], dict[str, float]]:
    """``consilium cohort`` in a fresh interpreter: its wall time from start to exit, the CPU time it took
    (user and system, its threads included), its traces, and its timeline (seconds from the start: its first
    call, the end of its exit functions; empty with ``profile``). ``tree``: the checkout whose package runs
    (``-m`` and ``runpy`` find it first in the folder it starts in; e.g. a ``git worktree`` of an earlier
    commit)."""
    out = folder / ("runs-cache" if cache else "runs-nocache")
    marks = folder / ("timeline-cache.json" if cache else "timeline-nocache.json")
    env = {**installed_env(folder.parent), "OPENAI_API_KEY": "sk-benchmark",
           "CONSILIUM_CACHE": str(folder / "responses.sqlite")}
    start = ["-m", "cProfile", "-o", str(profile), "-m", "consilium"] if profile else ["-c", _TIMELINE, str(marks)]
    command = [sys.executable, *start,
               "cohort", "--cases", str(case_dir), "--model", "openai:fake", "--base-url", url,
               "--concurrency", str(concurrency), "--out", str(out), *([] if cache else ["--no-cache"])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started_epoch = time.time()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, cwd=tree)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0:
        raise SystemExit(f"cohort failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    traces: list[TraceBase] = [read_consilium_trace(p) for p in sorted(out.glob("*/**/*.trace.json"))]
    failed = [t for t in traces if t.status != "completed"]
    if failed:
        raise SystemExit(f"{len(failed)} arms failed, e.g. {failed[0].error}")
    timeline = {} if profile else {k: v - started_epoch for k, v in json.loads(marks.read_text()).items()}
    return wall, cpu, traces, timeline


def measure(n: int, latency_ms: float, concurrency: int, rounds: int = 1, before: Path | None = None) -> dict[str, Any]:
    """Process (cache on, cache off) and in-process walls, alternately ``rounds`` times (medians), and the bound;
    with ``before``, that checkout's process (cache on) too, in the same rounds."""
    walls: dict[str, list[float]] = defaultdict(list)
    traces: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp, fake_server(latency_ms) as url:
        case_dir = write_cases(Path(tmp) / "cases", n)
        (Path(tmp) / "warm-up").mkdir()  # compiles every module a cohort imports, unmeasured
        run_process(Path(tmp) / "warm-up", write_cases(Path(tmp) / "one-case", 1), url, concurrency, cache=False)
        if before is not None:
            (Path(tmp) / "warm-up-before").mkdir()
            run_process(Path(tmp) / "warm-up-before", Path(tmp) / "one-case", url, concurrency, cache=False,
                        tree=before)
        for r in range(rounds):
            for cache in (True, False):
                folder = Path(tmp) / f"{r}-{cache}"
                folder.mkdir()
                wall, cpu, traces, timeline = run_process(folder, case_dir, url, concurrency, cache=cache)
                walls["process" if cache else "process_off"].append(wall)
                walls["process_cpu" if cache else "process_off_cpu"].append(cpu)
                if cache:
                    for key, seconds in timeline.items():
                        walls[key].append(seconds)
            if before is not None:
                folder = Path(tmp) / f"{r}-before"
                folder.mkdir()
                wall, cpu, _, timeline = run_process(folder, case_dir, url, concurrency, cache=True, tree=before)
                walls["before"].append(wall)
                walls["before_cpu"].append(cpu)
                for key, seconds in timeline.items():
                    walls[f"before_{key}"].append(seconds)
            for key, value in breakdown(Path(tmp), case_dir).items():
                walls[key].append(value)
            with fresh_cache() as path:
                cpu_started = time.process_time()
                walls["in_process"].append(aio.run(run_cohort(cases(n), latency_ms, concurrency, url, cache=path))[0])
                walls["in_process_cpu"].append(time.process_time() - cpu_started)
    result: dict[str, Any] = {k: sorted(v)[len(v) // 2] for k, v in walls.items()}
    return {**result, **bound_seconds(traces, latency_ms, concurrency), "arms": len(traces), "cases": n,
            "latency_ms": latency_ms, "concurrency": concurrency, "rounds": rounds}


#: What a cohort against an OpenAI-compatible server imports before its first call: the command, the consilium
#: protocol's graphs (LangGraph, LangChain core) and the HTTP client.
COHORT_IMPORTS = ("consilium.cli.cohort_cmd", "consilium.cohort.execute", "consilium.graphs.consilium.run",
                  "aiohttp")


def child_cpu(command: list[str], env: dict[str, str]) -> float:
    """The CPU seconds (user and system) a command took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def breakdown(tmp: Path, case_dir: Path) -> dict[str, float]:
    """Where a process's CPU goes before its first call: the interpreter and the imports (each in a fresh
    interpreter), and reading the case files (here, where their reader is loaded already)."""
    env = installed_env(tmp)
    interpreter = child_cpu([sys.executable, "-c", "pass"], env)
    imported = child_cpu([sys.executable, "-c", "import " + ", ".join(COHORT_IMPORTS)], env)
    started = time.process_time()
    for path in sorted(case_dir.glob("*.yaml")):
        load_case(path)
    return {"interpreter_cpu": interpreter, "imports_cpu": imported - interpreter,
            "cases_cpu": time.process_time() - started}


def process_section(quick: bool) -> list[str]:
    """make bench's section: the cohort command as a process beside the in-process run and the bound."""
    m = measure(12 if quick else 48, 100.0, 64)
    return [f"## The cohort command as a process ({m['cases']} cases × both formats, {m['calls']} calls, "
            f"--concurrency {m['concurrency']}, a {m['latency_ms']:.0f} ms stand-in)", "",
            *table(m), ""]


def table(m: dict[str, Any]) -> list[str]:
    bound = m["bound_s"]
    runs = (("`consilium cohort` process, default (cache on)", m["process"], m["process_cpu"]),
            ("`consilium cohort` process, `--no-cache`", m["process_off"], m["process_off_cpu"]),
            ("in-process (benchmarks/workload.py, cache on)", m["in_process"], m["in_process_cpu"]),
            *((("`consilium cohort` process of `--before`, default", m["before"], m["before_cpu"]),)
              if "before" in m else ()))
    return ["| run | wall s | bound / wall | CPU s | bound / CPU |", "|---|---|---|---|---|",
            *(f"| {name} | {wall:.2f} | **{bound / wall:.2f}** | {cpu:.2f} | {bound / cpu:.2f} |"
              for name, wall, cpu in runs),
            f"| critical-path bound | {bound:.2f} | 1 | | |", "",
            f"Bound = max(chain {m['chain']} steps × {m['latency_ms']:.0f} ms = {m['chain_s']:.2f} s, "
            f"{m['calls']} calls × {m['latency_ms']:.0f} ms / {m['concurrency']} = {m['spread_s']:.2f} s); "
            f"medians of {m['rounds']} alternating round(s); process / in-process "
            f"{m['process'] / m['in_process']:.2f}×; target: bound / process wall ≥ 0.7 in the default "
            "configuration. CPU s: what the process (its threads included) spent on the CPUs; on a machine "
            "others load, wall time stretches and CPU time does not, and bound / CPU is the most the wall ratio "
            "can reach on an idle one.",
            "", *timeline_lines(m),
            "", f"Of the process's CPU before its first call: the interpreter {m['interpreter_cpu']:.2f} s, "
            f"the imports a cohort needs ({', '.join(COHORT_IMPORTS)}) {m['imports_cpu']:.2f} s, reading the "
            f"{m['cases']} case files {m['cases_cpu']:.2f} s."]


def timeline_lines(m: dict[str, Any]) -> list[str]:
    """When the default process made its first call, finished its exit functions and was gone, beside the
    latest first call the target allows: the calls need the bound once the first goes out, so bound / wall
    ≥ 0.7 needs the first call within bound / 0.7 − bound of the start."""
    parts = [f"the default process: {_timeline(m, '', m['process'])}"]
    if "before_first_call" in m:
        parts.append(f"`--before`'s: {_timeline(m, 'before_', m['before'])}")
    allowed = m["bound_s"] / 0.7 - m["bound_s"]
    return [f"Timeline (seconds from the start, medians): {'; '.join(parts)}. For bound / wall ≥ 0.7 the first "
            f"call must go out by {allowed:.2f} s."]


def _timeline(m: dict[str, Any], prefix: str, gone: float) -> str:
    return (f"first call at {m[prefix + 'first_call']:.2f} s, exit functions done at "
            f"{m[prefix + 'exit_functions_done']:.2f} s, process gone at {gone:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=48)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are shown")
    parser.add_argument("--before", type=Path, help="another checkout (git worktree add /tmp/before REV) whose "
                                                    "process runs in the same rounds, for a before/after")
    args = parser.parse_args()
    m = measure(args.cases, args.latency_ms, args.concurrency, args.rounds, args.before)
    print(f"{m['cases']} cases × both formats = {m['arms']} arms, {m['calls']} calls, on {os.cpu_count()} CPUs "
          f"(load average {os.getloadavg()[0]:.1f})")
    print("\n".join(table(m)))


if __name__ == "__main__":
    main()
