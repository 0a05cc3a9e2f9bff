"""What every benchmark runs on: the shipped example case copied N times, the scripted answers of the
example panel (in-process, or served over HTTP by benchmarks/fakeserver.py), a fresh response cache
per measurement, and the cohort runner the suite times.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from consilium.cases import Case, load_case
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.run import run_case
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.factory import ModelOptions, build_model
from consilium.models.protocol import ChatModel
from consilium.models.wrappers import CachedModel, ConcurrencyLimitedModel, RetryingModel, RetryPolicy

__all__ = ["EXAMPLE", "HTTP_RULES", "PANEL", "ROOT", "RULES", "cases", "fake_server", "fresh_cache",
           "read_consilium_trace", "run_cohort"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
#: The scripted answers of every benchmark (consilium, board and judge), from the shipped example.
RULES = Script.load(PANEL).rules


def read_consilium_trace(path: str | Path) -> Trace:
    """A consilium trace the benchmark wrote; any other kind of trace there is a broken run."""
    trace = read_trace(path)
    if not isinstance(trace, Trace):
        raise SystemExit(f"{path}: kind: expected a consilium trace, got {trace.kind!r}")
    return trace


def _json(stage: str, *, role: str | None = None, contains: str | None = None) -> Any:
    """The JSON answer of the shipped panel's rule for ``stage`` with exactly that ``role`` and ``contains``
    filter (None: the rule has none), found by what it says rather than where it stands in the file."""
    for rule in RULES:
        if rule.stage == stage and rule.role == role and rule.contains == contains and not rule.contains_all:
            return rule.json_
    raise LookupError(f"examples/models/scripted-panel.yaml has no {stage} rule with role {role!r} and "
                      f"contains {contains!r}")


# The same answers for the fake HTTP server, chosen by substrings of the prompt (it sees no call tags).
HTTP_RULES: list[dict[str, Any]] = [
    {"contains": ["Choose the panel of specialists"], "json": _json("role_assignment")},
    {"contains": ["Give your opinion now"], "json": _json("opinion", contains='"final_conclusion"')},
    {"contains": ["Write your opinion now"], "response": "Opinion: A is most likely; B is possible."},
    {"contains": ['these string fields: "final_opinion"'], "json": _json("synthesis", contains='"final_opinion"')},
    {"contains": ["one shared consilium report in prose"], "response": "Report: A is most likely."},
    {"contains": ["(version 1)", "You are the Radiologist on this panel. Cast your vote"],
     "json": _json("vote", role="radiologist")},
    {"contains": ["Cast your vote now"], "json": _json("vote")},
    {"contains": ['"final_opinion": "..."'], "json": _json("revision", contains='"final_opinion": "..."')},
    {"contains": ["the full revised report in prose"], "json": _json("revision")},
]


@contextmanager
def fake_server(latency_ms: float, rules_data: list[dict[str, Any]] | None = None,
                extra_args: tuple[str, ...] = ()) -> Iterator[str]:
    """benchmarks/fakeserver.py in its own process (``extra_args`` added to its command line, e.g. a
    simulated prefix cache); yields its base URL."""
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.json"
        rules.write_text(json.dumps(HTTP_RULES if rules_data is None else rules_data))
        process = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "fakeserver.py"), "--rules", str(rules),
                                    "--latency-ms", str(latency_ms), *extra_args], stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line.startswith("PORT "):
                raise RuntimeError(f"the fake server did not start: {line!r}")
            yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
        finally:
            process.terminate()
            process.wait(timeout=10)


def cases(n: int) -> list[Case]:
    base = load_case(EXAMPLE)
    return [base.model_copy(update={"id": f"bench-{i:04d}",
                                    "presentation": f"{base.presentation} (patient {i})"}) for i in range(n)]


async def run_cohort(items: list[Case], latency_ms: float, concurrency: int,
                     base_url: str | None = None, cache: Path | None = None) -> tuple[float, list[Any]]:
    """Both formats of every case, ``concurrency`` cases and calls in flight, against the scripted model
    (in-process) or, with ``base_url``, the fake HTTP server through the whole openai backend stack.
    With ``cache`` (a fresh file), the response cache is on, as it is by default (``build_model``'s
    layers: cache → retry → limit); without it, the stack ``--no-cache`` runs. The time includes the
    cache's last commit (``aclose`` flushes it)."""
    model: ChatModel
    if base_url:
        model = build_model("openai:fake", ModelOptions(base_url=base_url, max_concurrency=concurrency,
                                                        cache=cache is not None, cache_path=cache))
    else:  # scripted models are never cached by build_model: the same layers, built here
        model = RetryingModel(ConcurrencyLimitedModel(ScriptedModel(Script(rules=RULES, latency_ms=latency_ms)),
                                                      concurrency), RetryPolicy())
        if cache is not None:
            model = CachedModel(model, cache)
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case) -> list[Any]:
        async with gate:
            return await run_case(case, ["free-form", "structured"], RunModels(model, model), ConsiliumConfig(),
                                  run_id="bench")

    started = time.perf_counter()
    try:
        traces = [t for group in await asyncio.gather(*(one(c) for c in items)) for t in group]
    finally:
        await model.aclose()
    failed = [t.error for t in traces if t.status != "completed"]
    if failed:
        raise RuntimeError(f"{len(failed)} benchmark runs failed, e.g. {failed[0]}")
    return time.perf_counter() - started, traces


@contextmanager
def fresh_cache() -> Iterator[Path]:
    """A response-cache file of its own for one measurement (every call a miss, as on a first run)."""
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp) / "responses.sqlite"
