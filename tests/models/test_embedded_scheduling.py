"""The embedded model: a one-slot backend serves a case's calls together, so
llama.cpp's single prefix is kept; its threads are the CPUs the process may use; the grammar keeps the
schemas' own length bounds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from consilium import aio
from consilium.agents.schemas import opinion_schema, report_schema, revision_schema
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import DEFAULT_BUDGET_CHARS, ConsiliumConfig
from consilium.graphs.consilium.run import run_case
from consilium.graphs.consilium.trace import Trace
from consilium.models.backends.llama import GRAMMAR_MAX_LENGTH, grammar_safe
from consilium.models.wrappers import ConcurrencyLimitedModel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from embedded import LlamaSlot, cached_share  # noqa: E402  (benchmarks/embedded.py)
from workload import cases  # noqa: E402


def _cohort(keep_loaded_case: bool | None) -> tuple[LlamaSlot, list[Trace]]:
    """Three cases, both formats, all in flight at once through the real graph, over a backend that
    declares one slot and keeps only the last call's tokens, as llama.cpp does."""
    backend = LlamaSlot(latency_ms=60)
    model = ConcurrencyLimitedModel(backend, 4, keep_loaded_case=keep_loaded_case)

    async def run() -> list[Trace]:
        groups = await asyncio.gather(*(run_case(case, ["free-form", "structured"], RunModels(model, model),
                                                 ConsiliumConfig(), run_id="t") for case in cases(3)))
        return [t for group in groups for t in group]

    traces = aio.run(run())
    assert [t.status for t in traces] == ["completed"] * 6
    return backend, traces


def test_a_one_slot_backend_serves_each_case_s_calls_together() -> None:
    backend, traces = _cohort(None)
    served = backend.served
    # Expected, independently of the scheduler: each case's calls form one unbroken run, the cases in
    # the order their first calls arrived (bench-0000 first: its assignment is asked first).
    runs = [key for i, key in enumerate(served) if i == 0 or served[i - 1] != key]
    assert runs == ["bench-0000", "bench-0001", "bench-0002"]
    # Each case's calls as its traces record them (the shared assignment once) were all served.
    for case_id in runs:
        mine = [t for t in traces if t.case_id == case_id]
        assert served.count(case_id) == sum(len(t.calls) for t in mine) - 1
    # Kept together, a case's calls find their own prefix loaded (the traces' cached tokens), as one
    # case alone does; admitted least-advanced-first they do not.
    _, interleaved = _cohort(False)
    assert cached_share(traces) > 0.75 > 0.4 > cached_share(interleaved)


def test_a_one_slot_backend_admits_one_call_at_a_time_and_others_keep_their_limit() -> None:
    from consilium.models import CallTag, Message, ModelRequest
    from consilium.models.backends.scripted import Script, ScriptedModel

    request = ModelRequest(messages=(Message(role="user", content="go"),), tag=CallTag(stage="vote"))

    def peak(limited: ConcurrencyLimitedModel) -> int:
        async def four() -> None:
            await asyncio.gather(*(limited.generate(request) for _ in range(4)))

        aio.run(four())
        return limited.peak_in_flight

    one_slot = ConcurrencyLimitedModel(LlamaSlot(latency_ms=20), 4)
    assert one_slot.keeps_loaded_case and peak(one_slot) == 1
    assert peak(ConcurrencyLimitedModel(LlamaSlot(latency_ms=20), 4, keep_loaded_case=False)) == 4
    served = ConcurrencyLimitedModel(ScriptedModel(Script(default="ok", latency_ms=20)), 4)  # no slots declared
    assert not served.keeps_loaded_case and peak(served) == 4


def test_the_llama_backend_uses_the_cpus_the_process_may_run_on() -> None:
    """Restricted to one CPU (as a container or taskset does), the backend runs one thread."""
    if not hasattr(__import__("os"), "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    code = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
            "from consilium.models.backends.llama import LlamaCppModel, embedded_model_path, usable_cpus; "
            "print(usable_cpus(), LlamaCppModel(embedded_model_path()).n_threads, os.cpu_count())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    usable, threads, _machine = map(int, done.stdout.split())
    assert (usable, threads) == (1, 1)


@pytest.mark.parametrize("name", ["opinion", "report", "revision"])
def test_the_grammar_keeps_the_real_schemas_length_bounds_and_builds(name: str) -> None:
    """Measured (benchmarks/embedded.py): the bounds cost under a millisecond per call and decode as fast
    as no bounds, and they end a looping section; so every bound llama.cpp accepts stays in the grammar."""
    import llama_cpp
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

    from consilium.models.backends.llama import embedded_model_path

    schema = {"opinion": opinion_schema(DEFAULT_BUDGET_CHARS), "report": report_schema(DEFAULT_BUDGET_CHARS),
              "revision": revision_schema(DEFAULT_BUDGET_CHARS, False)}[name].json_schema
    safe = grammar_safe(schema)
    bounds = _bounds(schema)
    kept = _bounds(safe)
    # each bound one above the schema's: a string the grammar had to end is one character over its
    # budget, so validation refuses it and it is repaired, never passed off cut
    assert bounds and kept == [b + 1 for b in bounds if b + 1 <= GRAMMAR_MAX_LENGTH]
    if name == "revision":  # the free-form report's one string (4,800) is over llama.cpp's limit
        assert DEFAULT_BUDGET_CHARS in bounds and DEFAULT_BUDGET_CHARS not in kept
    grammar = LlamaGrammar.from_json_schema(json.dumps(safe), verbose=False)
    llm = Llama(model_path=str(embedded_model_path()), n_ctx=256, vocab_only=True, verbose=False)
    try:
        sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode(),
                                                       grammar._root.encode())
        assert sampler is not None
        llama_cpp.llama_sampler_free(sampler)
    finally:
        llm.close()


def _bounds(schema: object) -> list[int]:
    if isinstance(schema, dict):
        own = [schema["maxLength"]] if isinstance(schema.get("maxLength"), int) else []
        return own + [b for value in schema.values() for b in _bounds(value)]
    if isinstance(schema, list):
        return [b for value in schema for b in _bounds(value)]
    return []


def test_constrained_decoding_samples_first_and_the_grammar_holds() -> None:
    """The grammar checks the one token the other samplers pick (not the whole vocabulary), and the answer
    is one a fresh copy of the grammar accepts token by token."""
    import ctypes
    import math

    import llama_cpp

    from consilium.models import CallTag, GenerationSettings, Message, ModelRequest
    from consilium.models.backends.llama import GrammarLast, LlamaCppModel, embedded_model_path, json_grammar

    schema = opinion_schema(600)
    model = LlamaCppModel(embedded_model_path(), n_ctx=1024)
    assert model.endpoint.endswith(":grammar=last:bounds=over1-ranges")
    request = ModelRequest(messages=(Message(role="user", content="Chest pain after flu, raised troponin. Opinion "
                                                                  "as JSON."),),
                           settings=GenerationSettings(max_tokens=48, seed=3), schema=schema,
                           tag=CallTag(stage="opinion"))
    response = model._complete(request)
    llm = model._llm
    sampler = llm._sampler
    assert isinstance(sampler, GrammarLast)
    tokens = llm.tokenize(response.text.encode(), add_bos=False, special=False)
    grammar = json_grammar(schema.json_schema)
    fresh = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode(), grammar._root.encode())
    one = (llama_cpp.llama_token_data * 1)()

    def allowed(token: int) -> bool:
        one[0] = llama_cpp.llama_token_data(token, 1.0, 0.0)
        candidates = llama_cpp.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(fresh, ctypes.byref(candidates))
        return math.isfinite(one[0].logit)

    try:
        for token in tokens:
            assert allowed(token)
            llama_cpp.llama_sampler_accept(fresh, token)
        assert response.text.startswith("{") and sampler.resampled >= 0
    finally:
        llama_cpp.llama_sampler_free(fresh)
        aio.run(model.aclose())


def test_the_grammar_keeps_control_characters_out_of_strings() -> None:
    import ctypes
    import math

    import llama_cpp
    from llama_cpp import Llama

    from consilium.models.backends.llama import embedded_model_path, json_grammar

    grammar = json_grammar(opinion_schema(600).json_schema)
    llm = Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode(),
                                                   grammar._root.encode())
    try:
        for token in llm.tokenize(b'{"clinical_data": "Fever', add_bos=False, special=False):
            llama_cpp.llama_sampler_accept(sampler, token)
        verdicts = []
        for text in (b"\n", b" and"):
            [token] = llm.tokenize(text, add_bos=False, special=False)
            one = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 1.0, 0.0))
            candidates = llama_cpp.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
            verdicts.append(math.isfinite(one[0].logit))
        assert verdicts == [False, True]  # a raw newline in a string is refused, a word is not
    finally:
        llama_cpp.llama_sampler_free(sampler)
        llm.close()
