"""The ``vllm:`` backend on vLLM's async engine: every call in flight is one more sequence in the running
batch (no lock), requests are built from the chat template and the settings, usage and finish reasons
come from the engine's outputs, and a cancelled call leaves the batch.

Without a GPU these run against tests/vllm_standin/, a stand-in for the part of vLLM's API the backend
uses, put on ``sys.path`` only inside each test. The last test runs a tiny real model when vLLM and a
GPU are there, and is skipped otherwise.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from consilium.cli import main
from consilium.errors import IncompleteAnswerError, ModelError, TransientModelError, UserError
from consilium.models.backends.vllm_engine import MIN_VLLM, VLLMModel
from consilium.models.factory import ModelOptions, build_model, for_run
from consilium.models.structured import OutputSchema
from consilium.models.types import CallTag, GenerationSettings, Message, ModelRequest
from consilium.models.wrappers.recording import CallRecorder

STANDIN = Path(__file__).resolve().parents[1] / "vllm_standin"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cases"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
          "additionalProperties": False}


def _forget_vllm() -> None:
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        del sys.modules[name]


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The stand-in's control module (``vllm._standin``), fresh; every ``vllm`` module is gone afterwards,
    so a later test sees vLLM as not installed again."""
    _forget_vllm()
    monkeypatch.syspath_prepend(str(STANDIN))
    import vllm._standin as control

    control.reset()
    yield control
    _forget_vllm()


def _request(text: str = "What is the diagnosis?", *, schema: dict[str, Any] | None = None,
             **settings: Any) -> ModelRequest:
    return ModelRequest(
        messages=(Message(role="system", content="You are a cardiologist."), Message(role="user", content=text)),
        settings=GenerationSettings(**settings),
        schema=OutputSchema.from_json_schema(schema) if schema is not None else None,
        tag=CallTag(stage="opinion", role="cardiologist"))


def _engine(control: ModuleType) -> Any:
    assert len(control.script.engines) == 1
    return control.script.engines[0]


async def test_a_request_is_the_chat_template_and_the_settings(standin: ModuleType) -> None:
    standin.script.responder = lambda prompt, params: '{"answer": "myocarditis"}' if params.structured_outputs \
        else "Myocarditis."
    model = VLLMModel("standin/tiny")
    structured = await model.generate(_request(schema=SCHEMA, temperature=0.7, top_p=0.9, seed=11, max_tokens=64))
    text = await model.generate(_request("Free text, please.", seed=None))
    engine = _engine(standin)
    from vllm.sampling_params import RequestOutputKind

    (first_id, first_prompt, first), (_, second_prompt, second) = engine.requests
    # The prompt: the engine tokenizer's chat template over the messages, encoded without a second BOS.
    assert engine.tokenizer.templated[0] == [{"role": "system", "content": "You are a cardiologist."},
                                             {"role": "user", "content": "What is the diagnosis?"}]
    template = ("<s><|system|>\nYou are a cardiologist.\n<|user|>\nWhat is the diagnosis?\n<|assistant|>\n")
    assert first_prompt == {"prompt_token_ids": engine.tokenizer.encode(template, add_special_tokens=False)}
    assert first_prompt["prompt_token_ids"].count(1) == 1
    assert engine.tokenizer.decode(second_prompt["prompt_token_ids"]).endswith(
        "<|user|>\nFree text, please.\n<|assistant|>\n")
    # The settings, one request each; a schema only where the request has one.
    assert set(first.given) == {"temperature", "top_p", "seed", "max_tokens", "output_kind", "structured_outputs"}
    assert (first.temperature, first.top_p, first.seed, first.max_tokens) == (0.7, 0.9, 11, 64)
    assert first.output_kind == RequestOutputKind.FINAL_ONLY
    assert first.structured_outputs.json == SCHEMA
    assert "structured_outputs" not in second.given and second.structured_outputs is None
    assert (second.temperature, second.top_p, second.seed, second.max_tokens) == (0.0, 1.0, None, 512)
    assert engine.engine_args.model == "standin/tiny" and engine.engine_args.disable_log_stats is True
    assert structured.text == '{"answer": "myocarditis"}' and text.text == "Myocarditis."
    assert first_id.startswith("consilium-")
    await model.aclose()


@pytest.mark.parametrize("async_get_tokenizer", [False, True], ids=["tokenizer-method", "tokenizer-coroutine"])
async def test_concurrent_calls_are_all_in_the_running_batch_at_once(standin: ModuleType,
                                                                     async_get_tokenizer: bool) -> None:
    """No lock: eight concurrent calls are eight sequences decoding together (the old backend's lock
    around ``LLM.chat`` ran one at a time); each has its own request id."""
    standin.script.async_get_tokenizer = async_get_tokenizer
    standin.script.responder = lambda prompt, params: f"answer to {prompt.split('<|user|>')[1].split()[0]}"
    model = VLLMModel("standin/tiny")
    responses = await asyncio.gather(*(model.generate(_request(f"q{i} ...")) for i in range(8)))
    engine = _engine(standin)
    assert engine.max_running == 8
    ids = [rid for rid, _, _ in engine.requests]
    assert len(ids) == len(set(ids)) == 8
    assert [r.text for r in responses] == [f"answer to q{i}" for i in range(8)]
    await model.aclose()


async def test_the_concurrency_limit_is_the_batch_size(standin: ModuleType) -> None:
    """Through the shared layers (``build_model``): ``--max-concurrency`` sequences share the batch, no more."""
    for limit in (3, 16):
        standin.reset()
        standin.script.responder = lambda prompt, params: "a longer answer that takes several scheduler steps"
        model = build_model("vllm:standin/tiny", ModelOptions(max_concurrency=limit, cache=False))
        await asyncio.gather(*(model.generate(_request(f"q{i}")) for i in range(16)))
        assert _engine(standin).max_running == limit
        await model.aclose()


async def test_usage_and_finish_reason_come_from_the_outputs(standin: ModuleType) -> None:
    standin.script.responder = lambda prompt, params: "Acute myocarditis."
    model = VLLMModel("standin/tiny")
    first = await model.generate(_request())
    again = await model.generate(_request())
    engine = _engine(standin)
    prompt_ids = engine.requests[0][1]["prompt_token_ids"]
    assert first.usage.input_tokens == len(prompt_ids) and first.usage.output_tokens == len("Acute myocarditis.")
    assert not first.usage.estimated and first.usage.calls == 1
    # The second identical prompt finds its full 16-token blocks in the engine's prefix cache.
    assert first.usage.cached_tokens == 0 and again.usage.cached_tokens == (len(prompt_ids) // 16) * 16
    assert first.finish_reason == "stop" and first.model == "standin/tiny"
    cut = await model.generate(_request(max_tokens=5))
    assert (cut.text, cut.finish_reason, cut.usage.output_tokens) == ("Acute", "length", 5)
    await model.aclose()


async def test_a_think_block_is_kept_out_of_the_answer_and_counted_as_reasoning(standin: ModuleType) -> None:
    """DeepSeek-R1 / Qwen3 offline: the leading <think> block goes to ``reasoning``, the rest is the answer that is
    parsed; its tokens (the stand-in's tokenizer is one token per character) are a part of the output tokens."""
    content = "<think>Fever, then chest pain: viral.</think>\nAcute myocarditis."
    standin.script.responder = lambda prompt, params: "Myocarditis." if "Plain" in prompt else content
    model = VLLMModel("standin/tiny")
    response = await model.generate(_request())
    assert response.text == "Acute myocarditis." and response.reasoning == "Fever, then chest pain: viral."
    assert response.usage.output_tokens == len(content)
    assert response.usage.reasoning_tokens == len("Fever, then chest pain: viral.")
    plain = await model.generate(_request("Plain, please."))
    assert plain.reasoning is None and plain.usage.reasoning_tokens == 0
    await model.aclose()


async def test_partial_outputs_are_passed_over_for_the_final_one(standin: ModuleType) -> None:
    standin.script.stream_partials = True  # an engine that streams every step whatever was asked
    standin.script.responder = lambda prompt, params: "Acute viral myocarditis, most likely."
    model = VLLMModel("standin/tiny")
    response = await model.generate(_request())
    assert response.text == "Acute viral myocarditis, most likely." and response.finish_reason == "stop"
    assert response.usage.output_tokens == len(response.text)
    await model.aclose()


async def test_a_cut_off_answer_goes_to_the_incomplete_answer_handling(standin: ModuleType) -> None:
    """``finish_reason: length`` from the engine is asked again with twice the room (wrappers/answers.py)."""
    standin.script.responder = lambda prompt, params: "0123456789ab"
    recorder = CallRecorder()
    model = for_run(build_model("vllm:standin/tiny", ModelOptions(cache=False)), recorder)
    response = await model.generate(_request(max_tokens=4))
    assert response.text == "0123456789ab"
    assert [params.max_tokens for _, _, params in _engine(standin).requests] == [4, 8, 16]
    assert [c.response for c in recorder.calls] == ["0123", "01234567", "0123456789ab"]
    with pytest.raises(IncompleteAnswerError, match="finish_reason length"):
        await for_run(build_model("vllm:standin/tiny", ModelOptions(cache=False)), CallRecorder(),
                      answer_retries=0).generate(_request(max_tokens=4))


async def test_a_cancelled_call_is_aborted_and_leaves_the_batch(standin: ModuleType) -> None:
    standin.script.responder = lambda prompt, params: "x" * 400
    standin.script.tokens_per_step = 1
    model = VLLMModel("standin/tiny")
    task = asyncio.create_task(model.generate(_request()))
    while not (standin.script.engines and _engine(standin).running) and not task.done():
        await asyncio.sleep(0.001)
    engine = _engine(standin)
    (request_id,) = engine.running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert request_id in engine.aborted and not engine.running
    # A call past its timeout is aborted too, and is a transient error (retried by the retry wrapper).
    with pytest.raises(TransientModelError, match=r"within 0\.05 s"):
        await model.generate(_request(timeout_s=0.05))
    assert engine.requests[-1][0] in engine.aborted and not engine.running
    await model.aclose()


async def test_aclose_shuts_the_engine_down(standin: ModuleType) -> None:
    model = VLLMModel("standin/tiny")
    await model.generate(_request())
    engine = _engine(standin)
    await model.aclose()
    assert engine.shut_down
    await model.aclose()  # twice is harmless
    await model.generate(_request())  # a later call starts a new engine
    assert len(standin.script.engines) == 2 and not standin.script.engines[1].shut_down
    await model.aclose()


def test_a_new_event_loop_gets_its_own_engine(standin: ModuleType) -> None:
    """The engine's output task lives on the loop that started it: a call on a later loop (another
    ``asyncio.run``) shuts the old engine down and starts one there."""
    model = VLLMModel("standin/tiny")
    asyncio.run(model.generate(_request()))
    asyncio.run(model.generate(_request()))
    first, second = standin.script.engines
    assert first.shut_down and not second.shut_down and len(second.requests) == 1
    asyncio.run(model.aclose())
    assert second.shut_down


async def test_an_engine_that_cannot_start_fails_each_call_without_loading_again(standin: ModuleType) -> None:
    standin.script.fail_start = "CUDA out of memory"
    model = VLLMModel("standin/tiny")
    for _ in range(2):
        with pytest.raises(ModelError, match=r"vllm:standin/tiny: the engine did not start: .*CUDA out of memory"):
            await model.generate(_request())
    assert standin.script.starts == 1


def test_a_vllm_without_structured_outputs_is_refused_by_version(standin: ModuleType,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import vllm.sampling_params

    monkeypatch.delattr(vllm.sampling_params, "StructuredOutputsParams")
    with pytest.raises(UserError, match=rf"needs vLLM {MIN_VLLM} or later \(found 0.10.2\+standin\)"):
        VLLMModel("standin/tiny")


def test_without_vllm_the_error_names_the_extra() -> None:
    _forget_vllm()
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(UserError, match=r"pip install 'consilium\[vllm\]'"):
        VLLMModel("some/model")


_REPORT = {"final_opinion": "Acute myocarditis", "summary": "s", "final_differential": "1. Myocarditis",
           "diagnostic_plan": "MRI", "management_plan": "m", "safety_warnings": "w"}


def _panel(prompt: str, params: Any) -> str:
    """A panel that answers by the schema it is held to: every role agrees in round 1."""
    if params.structured_outputs is None:
        return "Acute myocarditis is most likely; pericarditis is possible."
    properties = params.structured_outputs.json["properties"]
    if "primary" in properties:
        return json.dumps({"primary": {"label": "Cardiologist", "justification": "chest pain, troponin"},
                           "supporting": [{"label": "Radiologist", "justification": "cardiac MRI"},
                                          {"label": "Internist", "justification": "the whole patient"}]})
    if "final_conclusion" in properties:
        return json.dumps({"clinical_data": "d", "syndromes": "s", "differential_diagnosis": "1. Myocarditis",
                           "diagnostic_strategy": "MRI", "management_strategy": "m",
                           "final_conclusion": "Acute myocarditis"})
    if "vote" in properties:
        return json.dumps({"vote": "accept", "reason": "agreed", "requested_change": None})
    if "changed" in properties:
        report: Any = _REPORT if "string" not in json.dumps(properties["report"].get("type", "")) else "Report."
        return json.dumps({"changed": False, "change_summary": "none", "report": report})
    return json.dumps(_REPORT)


def test_a_consilium_runs_end_to_end_on_the_async_engine(standin: ModuleType, tmp_path: Path) -> None:
    """The compiled graph, both formats, through the CLI: completed traces whose usage is the engine's
    own count, the roles' parallel calls in one batch, and a schema exactly on the structured calls."""
    standin.script.responder = _panel
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(EXAMPLES / "diagnostic-myocarditis.yaml"), "--model",
                 "vllm:standin/tiny", "--max-concurrency", "8", "--no-cache", "--out", str(out)]) == 0
    engine = _engine(standin)
    assert engine.shut_down  # the command closed the model
    traces = {p.name.split(".")[1]: json.loads(p.read_text()) for p in out.rglob("*.trace.json")}
    assert set(traces) == {"structured", "free-form"}
    calls = 0
    for trace in traces.values():
        assert trace["status"] == "completed" and trace["model"] == "standin/tiny"
        assert trace["stop_reason"] == "consensus"
        for call in trace["calls"]:
            usage = call["usage"]
            assert not usage["estimated"] and usage["output_tokens"] == len(call["response"])
            calls += 1
        # Every call after the first shares the case's opening with an earlier one: served from the cache.
        assert all(c["usage"]["cached_tokens"] > 0 for c in trace["calls"][1:])
    assert len(engine.requests) == calls - 1  # the role assignment is shared by both formats
    assert engine.max_running >= 3  # the panel's opinions and votes decode together
    schemas = [params.structured_outputs for _, _, params in engine.requests]
    free_text = [s for s in schemas if s is None]
    assert len(free_text) == 4  # the free-form opinions (3) and synthesis (1)
    assert all(s.json["type"] == "object" for s in schemas if s is not None)


def _real_vllm_and_gpu() -> str | None:
    """Why the real-model test cannot run here, or None."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'consilium[vllm]')"
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed"
    import torch

    return None if torch.cuda.is_available() else "no CUDA GPU"


@pytest.mark.gpu
def test_a_tiny_real_model_answers_concurrently_with_a_schema(tmp_path: Path) -> None:
    _forget_vllm()
    reason = _real_vllm_and_gpu()
    if reason:
        pytest.skip(reason)

    async def go() -> list[Any]:
        model = VLLMModel("HuggingFaceTB/SmolLM2-135M-Instruct", max_model_len=2048, gpu_memory_utilization=0.3)
        try:
            return list(await asyncio.gather(*(model.generate(_request(f"Patient {i}: chest pain.", schema=SCHEMA,
                                                                       max_tokens=64)) for i in range(8))))
        finally:
            await model.aclose()

    for response in asyncio.run(go()):
        assert response.finish_reason in ("stop", "length") and response.usage.input_tokens > 0
        if response.finish_reason == "stop":
            assert isinstance(json.loads(response.text)["answer"], str)
