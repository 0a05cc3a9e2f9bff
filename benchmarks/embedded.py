"""Embedded-model benchmark: llama.cpp's one prefix slot, grammar bounds, and the demo's wall time.

    .venv/bin/python benchmarks/embedded.py [--quick] [--skip-demo]

1. Prefix tokens avoided, one case vs a cohort of 4 at the default concurrency (4 arms, 4 calls in
   flight), with the loaded case admitted first (now) and with the ordinary least-advanced-first
   admission (before; ``limit.KEEP_LOADED_CASE = False``). The model is :class:`LlamaSlot`: the scripted
   panel served one call at a time, keeping, as llama.cpp does, only the last call's tokens; the cached
   share is read back from the traces' ``usage.cached_tokens``.
2. Grammar: build time (GBNF conversion and llama.cpp's grammar sampler) of the real opinion and
   report schemas with and without their ``maxLength`` bounds, and decode ms/token of the embedded
   model (the backend itself) with the grammar first (before), without bounds, with the grammar last
   (now: ``GrammarLast``) and with no grammar.
3. The embedded model for real, before (both switches off: ``limit.KEEP_LOADED_CASE``,
   ``llama.GRAMMAR_LAST``) and after: the demo (``simulate --case
   examples/cases/diagnostic-myocarditis.yaml --config configs/embedded-quick.yaml``, both formats) and
   a cohort of two example cases at the default concurrency, ``CONSILIUM_CACHE=off``; wall time, and the
   prompt tokens llama.cpp reused, from the traces' ``cached_tokens``.

Every figure is a ratio of two runs made side by side in this one run (a shared machine is noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from workload import RULES, cases, read_consilium_trace  # noqa: E402  (a script beside workload.py, run from anywhere)

from consilium import aio  # noqa: E402
from consilium.graphs.base import RunModels  # noqa: E402
from consilium.graphs.consilium.config import ConsiliumConfig  # noqa: E402
from consilium.graphs.consilium.run import run_case  # noqa: E402
from consilium.graphs.consilium.trace import Trace  # noqa: E402
from consilium.models.backends.scripted import Script, ScriptedModel  # noqa: E402
from consilium.models.protocol import NO_STAGE_LIMITS  # noqa: E402
from consilium.models.tokens import _encoding  # noqa: E402
from consilium.models.types import Message, ModelRequest, ModelResponse  # noqa: E402
from consilium.models.usage import Usage  # noqa: E402
from consilium.models.wrappers import ConcurrencyLimitedModel, current_work_key  # noqa: E402

__all__ = ["LlamaSlot", "cached_share", "embedded_section", "prefix_slot"]

DEMO_CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
DEMO_CONFIG = ROOT / "configs" / "embedded-quick.yaml"


def _chatml(messages: tuple[Message, ...]) -> str:
    """The prompt as SmolLM2's chat template lays it out, up to the assistant's turn."""
    return "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


class LlamaSlot:
    """The scripted panel served as llama-cpp-python serves a GGUF model: one call at a time (a lock),
    with one context that keeps the last call's prompt and answer; a call reuses their longest common
    prefix with its prompt and reports it as ``cached_tokens`` (tokens counted with cl100k)."""

    slots = 1
    supports_images = False
    stage_max_tokens = NO_STAGE_LIMITS
    enforces_schemas = False  # its answers are the script's

    def __init__(self, latency_ms: float = 50.0) -> None:
        self.inner = ScriptedModel(Script(rules=RULES, latency_ms=latency_ms))
        self.model_id = self.inner.model_id
        self.endpoint = "llama-slot"
        self._lock = asyncio.Lock()
        self._context: list[int] = []
        #: The work-item key (case id) of each call, in the order served.
        self.served: list[str | None] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        encode = _encoding().encode
        prompt = encode(_chatml(request.messages), disallowed_special=())
        async with self._lock:
            self.served.append(current_work_key())
            reused = 0
            for a, b in zip(self._context, prompt, strict=False):
                if a != b:
                    break
                reused += 1
            response = await self.inner.generate(request)
            completion = encode(response.text, disallowed_special=())
            self._context = prompt + completion
        usage = Usage(input_tokens=len(prompt), output_tokens=len(completion),
                      cached_tokens=min(reused, len(prompt) - 1), calls=1)
        return response.model_copy(update={"usage": usage})

    async def aclose(self) -> None:
        await self.inner.aclose()


def cached_share(traces: list[Trace]) -> float:
    """Prompt tokens served from the slot over all prompt tokens, from the traces' calls (a shared
    role assignment, copied into the second format's trace, counted once)."""
    seen: set[tuple[str, int]] = set()
    cached = prompt = 0
    for trace in traces:
        for call in trace.calls:
            key = (call.request_hash, int(call.started_at * 1e6))
            if key in seen:
                continue
            seen.add(key)
            cached += call.usage.cached_tokens
            prompt += call.usage.input_tokens
    return cached / prompt if prompt else 0.0


async def _cohort(n_cases: int, keep_loaded_case: bool, parallel_arms: int = 4,
                  concurrency: int = 4) -> tuple[float, int, int]:
    """``n_cases`` (both formats), ``parallel_arms`` at a time as `consilium cohort` runs them; returns the
    cached share, calls and case switches (consecutive calls of different cases)."""
    backend = LlamaSlot()
    model = ConcurrencyLimitedModel(backend, concurrency, keep_loaded_case=keep_loaded_case)
    gate = asyncio.Semaphore(parallel_arms)

    async def one(case: Any) -> list[Trace]:
        async with gate:
            return await run_case(case, ["free-form", "structured"], RunModels(model, model), ConsiliumConfig(),
                                  run_id="bench")

    groups = await asyncio.gather(*(one(c) for c in cases(n_cases)))
    traces = [t for group in groups for t in group]
    if any(t.status != "completed" for t in traces):
        raise RuntimeError("a benchmark run failed")
    switches = sum(a != b for a, b in zip(backend.served, backend.served[1:], strict=False))
    return cached_share(traces), len(backend.served), switches


def prefix_slot(n_cases: int = 4) -> list[dict[str, Any]]:
    """Section 1's rows: one case and ``n_cases`` cases, before and after."""
    rows = []
    for label, n in (("one case", 1), (f"cohort of {n_cases}", n_cases)):
        row: dict[str, Any] = {"run": label}
        for policy, keep in (("before", False), ("after", True)):
            share, calls, switches = aio.run(_cohort(n, keep))
            row[policy] = share
            row[f"{policy}_switches"] = switches
            row["calls"] = calls
        rows.append(row)
    return rows


def _strip_bounds(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_bounds(v) for k, v in schema.items() if k != "maxLength"}
    if isinstance(schema, list):
        return [_strip_bounds(v) for v in schema]
    return schema


def grammar(decode_tokens: int = 96, repeats: int = 2) -> dict[str, Any]:
    """Section 2: grammar build ms per schema and decode ms/token, with and without ``maxLength``."""
    import llama_cpp
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

    from consilium.agents.schemas import opinion_schema, report_schema
    from consilium.graphs.consilium.config import DEFAULT_BUDGET_CHARS
    from consilium.models import CallTag, GenerationSettings, OutputSchema
    from consilium.models.backends.llama import LlamaCppModel, embedded_model_path, grammar_safe

    llm = Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
    schemas = {"opinion": opinion_schema(DEFAULT_BUDGET_CHARS).json_schema,
               "report": report_schema(DEFAULT_BUDGET_CHARS).json_schema}
    build: dict[str, dict[str, float]] = {}
    for name, schema in schemas.items():
        for label, variant in (("bounded", grammar_safe(schema)), ("unbounded", _strip_bounds(schema))):
            started = time.perf_counter()
            for _ in range(10):
                g = LlamaGrammar.from_json_schema(json.dumps(variant), verbose=False)
                sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, g._grammar.encode(),
                                                               g._root.encode())
                llama_cpp.llama_sampler_free(sampler)
            build.setdefault(name, {})[label] = (time.perf_counter() - started) / 10 * 1000
    llm.close()
    messages = (Message(role="system", content="You are the Cardiologist on a clinical panel."),
                Message(role="user", content="A 24-year-old man has chest pain five days after a flu-like illness; "
                                             "troponin is raised and the ECG shows diffuse ST elevation. Give your "
                                             "opinion as JSON with the sections asked for."))
    opinion = opinion_schema(DEFAULT_BUDGET_CHARS)
    unbounded = OutputSchema.from_json_schema(_strip_bounds(opinion.json_schema))
    variants = {"grammar first": (opinion, False), "grammar first, no bounds": (unbounded, False),
                "grammar last": (opinion, True), "grammar last, no bounds": (unbounded, True),
                "no grammar": (None, False)}
    models = {label: LlamaCppModel(embedded_model_path(), n_ctx=2048, grammar_last=last, repetition_window=None)
              for label, (_, last) in variants.items()}
    spent: dict[str, list[float]] = {label: [0.0, 0.0] for label in variants}
    for seed in range(repeats):  # interleaved, so load on the machine falls on every variant alike
        for label, (output, _) in variants.items():
            request = ModelRequest(messages=messages, schema=output, tag=CallTag(stage="opinion"),
                                   settings=GenerationSettings(max_tokens=decode_tokens, temperature=0.7, seed=seed))
            started = time.perf_counter()
            response = models[label]._complete(request)
            spent[label][0] += time.perf_counter() - started
            spent[label][1] += response.usage.output_tokens
    for model in models.values():
        aio.run(model.aclose())
    return {"build_ms": build, "ms_per_token": {k: s * 1000 / max(1, n) for k, (s, n) in spent.items()}}


def _consilium(now: bool, argv: list[str], out: Path) -> dict[str, Any]:
    """A consilium command in a subprocess, as `make demo` runs one (cache off); ``now`` False turns the
    two speed-ups (the loaded case first, the grammar last) off. Figures from its traces."""
    code = (f"import consilium.models.wrappers.limit as limit; limit.KEEP_LOADED_CASE = {now}; "
            f"import consilium.models.backends.llama as llama; llama.GRAMMAR_LAST = {now}; "
            "from consilium.cli import main; raise SystemExit(main(sys.argv[1:]))")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import sys; {code}", "--log-file", str(out.with_suffix(".log")), *argv,
                    "--config", str(DEMO_CONFIG), "--model", "embedded", "--out", str(out)],
                   capture_output=True, text=True, timeout=1800, env={**os.environ, "CONSILIUM_CACHE": "off"})
    wall = time.perf_counter() - started
    traces = [read_consilium_trace(p) for p in sorted(out.glob("**/*.trace.json"))]
    return {"wall_s": wall, "cached_share": cached_share(traces),
            "calls": sum(len(t.calls) for t in traces),
            "status": f"{sum(t.status == 'completed' for t in traces)}/{len(traces)} completed"}


def demo(cohort_cases: int = 2) -> dict[str, dict[str, Any]]:
    """Section 3: the demo (one case) and a cohort of ``cohort_cases`` at the default concurrency, before
    and after."""
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "cases"
        folder.mkdir()
        for path in sorted((ROOT / "examples" / "cases").glob("*.yaml"))[:cohort_cases]:
            (folder / path.name).write_text(path.read_text())
        for label, now in (("before", False), ("after", True)):
            rows[f"demo, {label}"] = _consilium(now, ["simulate", "--case", str(DEMO_CASE)], Path(tmp) / label)
            rows[f"cohort of {cohort_cases}, {label}"] = _consilium(now, ["cohort", "--cases", str(folder)],
                                                                   Path(tmp) / f"cohort-{label}")
    return rows


def embedded_section(quick: bool = False, with_demo: bool = True) -> list[str]:
    """This benchmark's Markdown, for benchmarks/suite.py."""
    lines = ["## 9. Embedded model: llama.cpp's prefix slot, grammar bounds, demo (benchmarks/embedded.py)", "",
             "Prompt tokens avoided (read back from the traces' `cached_tokens`; the scripted panel served as "
             "llama.cpp serves a GGUF model: one call at a time, one context holding the last call):", "",
             "| run | calls | before: least advanced first | after: the loaded case first | case switches "
             "before → after |", "|---|---|---|---|---|"]
    for r in prefix_slot(2 if quick else 4):
        lines.append(f"| {r['run']} | {r['calls']} | {r['before']:.1%} | {r['after']:.1%} | "
                     f"{r['before_switches']} → {r['after_switches']} |")
    g = grammar(48 if quick else 96, 1 if quick else 2)
    b, t = g["build_ms"], g["ms_per_token"]
    lines += ["", "Grammar (embedded model; opinion and report schemas at the default length budget):", "",
              "| | with maxLength bounds | without | ratio |", "|---|---|---|---|"]
    lines += [f"| {name} grammar build, ms | {v['bounded']:.2f} | {v['unbounded']:.2f} | "
              f"{v['bounded'] / max(v['unbounded'], 1e-6):.0f}× |" for name, v in b.items()]
    first = t["grammar first"]
    lines += ["", "| opinion decode (embedded backend) | ms/token | vs grammar first |", "|---|---|---|"]
    lines += [f"| {label} | {v:.1f} | {v / first:.2f}× |" for label, v in t.items()]
    if with_demo:
        d = demo()
        lines += ["", "The embedded model for real (configs/embedded-quick.yaml, both formats, CONSILIUM_CACHE=off; "
                      "the demo is `simulate` on the myocarditis example, the cohort `cohort --cases` on the first "
                      "two example cases at the default concurrency, 4):", "",
                  "| run | wall s | calls | prompt tokens reused (traces) | status |", "|---|---|---|---|---|"]
        lines += [f"| {label} | {r['wall_s']:.0f} | {r['calls']} | {r['cached_share']:.1%} | {r['status']} |"
                  for label, r in d.items()]
        ratios = [f"{kind}: **{d[f'{kind}, after']['wall_s'] / d[f'{kind}, before']['wall_s']:.2f}**"
                  for kind in ("demo", "cohort of 2")]
        lines += ["", f"Wall time after / before: {', '.join(ratios)}."]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--skip-demo", action="store_true", help="leave out the two embedded demo runs")
    args = parser.parse_args()
    print("\n".join(embedded_section(args.quick, not args.skip_demo)))


if __name__ == "__main__":
    main()
