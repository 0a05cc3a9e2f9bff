"""LangChain chat models as consilium models (docs/models.md, "langchain:MODULE:FACTORY"): through the Python
API as objects and on the command line as ``langchain:MODULE:FACTORY``, with langchain-core's fake chat
models (tests/support/langchain_fakes.py), and one real OpenAI-compatible path: ``langchain-openai``'s ``ChatOpenAI``
against llama-cpp-python's server running the embedded model."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
import support.langchain_fakes as fakes
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, SecretStr

import consilium
from consilium.cli import main
from consilium.errors import ModelError, UserError
from consilium.models import (
    CallRecorder,
    CallTag,
    GenerationSettings,
    Message,
    ModelOptions,
    ModelRequest,
    OutputSchema,
    for_run,
)
from consilium.models.backends.langchain_chat import LangChainChatModel, chat_model_identity
from consilium.models.factory import build_model, shared_layers
from consilium.models.wrappers import CachedModel, RetryPolicy

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.002)


def _structured_run(model: Any, **kwargs: Any) -> Any:
    [trace] = consilium.run(CASE, variants=["structured"], model=model, **kwargs)
    return trace


def _layers(model: Any) -> Iterator[Any]:
    while model is not None:
        yield model
        model = getattr(model, "inner", None)


def test_a_chat_model_object_runs_a_consilium_recorded_and_replayed_with_no_model_call() -> None:
    counter = fakes.CountingHandler()
    trace = _structured_run(fakes.panel(counter))
    assert trace.status == "completed" and trace.stop_reason == "consensus" and len(trace.rounds) == 1
    assert trace.model == "langchain:FakeMessagesListChatModel"
    assert [c.schema_name for c in trace.calls] == fakes.ORDER and counter.calls == 8
    # Usage is the messages' usage_metadata: input, output, cached input and reasoning tokens, as reported.
    assert all(c.usage.input_tokens == 120 and c.usage.output_tokens == 30 and c.usage.cached_tokens == 64
               and c.usage.reasoning_tokens == 4 and not c.usage.estimated for c in trace.calls)
    assert trace.usage.total.input_tokens == 960 and not trace.usage.total.estimated
    assert {c.model for c in trace.calls} == {"fake-panel-1"} and {c.finish_reason for c in trace.calls} == {"stop"}
    # The fake has no sampling fields: every setting is left out, and the trace says so.
    assert trace.calls[0].omitted_settings == ["temperature", "top_p", "seed", "max_tokens"]
    check = consilium.replay(trace)
    assert check.identical and check.served == 8
    assert counter.calls == 8  # replay called the LangChain model not once


def test_a_chat_model_is_moderator_judge_and_specialist_too() -> None:
    panel, moderator = fakes.tool_panel(), fakes.tool_panel()
    trace = _structured_run(panel, moderator=moderator)
    assert trace.status == "completed" and trace.moderator_model == "langchain:ToolCallingFake"
    assert [s["tools"][0] for s in moderator.seen] == ["RoleAssignment", "StructuredReport"]
    assert sorted(s["tools"][0] for s in panel.seen) == ["StructuredOpinion"] * 3 + ["VoteAnswer"] * 3
    judge = FakeListChatModel(responses=[json.dumps({"rationale": "the same diagnosis", "score": 2})])
    judgement = consilium.judge(trace, "otb-conclusion-alignment", judge_model=judge)
    assert judgement.judge_model == "langchain:FakeListChatModel" and [i.score for i in judgement.items] == [2]
    assert judgement.usage.total.estimated and judgement.usage.total.calls == 1
    answer = consilium.turn(ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml", "Radiation oncologist",
                            "Is the patient a candidate for concurrent chemoradiotherapy?",
                            model=FakeListChatModel(responses=[json.dumps({"answer": "Yes, it is appropriate."})]))
    assert answer.status == "completed" and answer.model == "langchain:FakeListChatModel" and len(answer.calls) == 1


def test_the_api_docs_example_prints_what_it_says(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    doc = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", doc, flags=re.S) if "FakeListChatModel" in b]
    monkeypatch.chdir(ROOT)
    exec(compile(block, "docs/api.md, A LangChain chat model", "exec"), {})
    assert capsys.readouterr().out == "langchain:FakeListChatModel completed Acute viral myocarditis. 2\nTrue\n"


def test_usage_is_estimated_when_the_model_reports_none() -> None:
    trace = _structured_run(fakes.plain_panel())
    assert trace.status == "completed"
    assert all(c.usage.estimated and c.usage.input_tokens > 0 and c.usage.output_tokens > 0 for c in trace.calls)
    assert trace.usage.total.estimated and consilium.replay(trace).identical


def test_structured_output_goes_through_the_models_own_tool_calling() -> None:
    model = fakes.tool_panel()
    trace = _structured_run(model)
    assert trace.status == "completed" and trace.model == "langchain:ToolCallingFake"
    # langchain-core's with_structured_output bound our schema as the one tool, chosen by force.
    assert [s["tools"] for s in model.seen] == [[name] for name in fakes.ORDER]
    assert {s["tool_choice"] for s in model.seen} == {"any"}
    # The answer is the tool call's arguments, validated by our schema as any answer is.
    assert json.loads(trace.calls[0].response) == fakes.ANSWERS["RoleAssignment"]
    assert trace.calls[0].parsed == fakes.ANSWERS["RoleAssignment"]
    # The request's settings reach the model's own fields; those it has no field for are recorded as left out.
    assert [(s["temperature"], s["max_tokens"]) for s in model.seen] == \
        [(c.settings.temperature, c.settings.max_tokens) for c in trace.calls]
    assert trace.calls[0].omitted_settings == ["top_p", "seed"]
    assert consilium.replay(trace).identical


def test_a_failing_chat_model_is_recorded_as_a_failed_run() -> None:
    trace = _structured_run(fakes.broken())
    assert trace.status == "failed" and trace.failed_stage == "role_assignment"
    assert "ValueError: the provider refused the request: quota exhausted" in (trace.error or "")


async def test_http_failures_are_classified_so_the_retry_layer_retries_what_may_pass() -> None:
    flaky = fakes.Failing(errors=[fakes.ProviderError("rate limited", 429), fakes.ProviderError("overloaded", 503)])
    model = shared_layers(LangChainChatModel(flaky), ModelOptions(cache=False, retry=FAST_RETRY))
    request = ModelRequest(messages=(Message(role="user", content="hi"),))
    response = await model.generate(request)
    assert response.text == "A plain answer." and flaky.calls == 3
    refused = shared_layers(LangChainChatModel(fakes.Failing(errors=[fakes.ProviderError("bad key", 401)])),
                            ModelOptions(cache=False, retry=FAST_RETRY))
    with pytest.raises(UserError, match="HTTP 401, the API key was refused"):
        await refused.generate(request)


async def test_a_slow_call_times_out_and_the_answer_is_read_as_the_answer_check_reads_any() -> None:
    slow = shared_layers(LangChainChatModel(FakeListChatModel(responses=["late"], sleep=0.5)),
                         ModelOptions(cache=False, retry=RetryPolicy(max_attempts=1)))
    with pytest.raises(ModelError, match=r"request timed out .*gave up after 1 attempts"):
        await slow.generate(ModelRequest(messages=(Message(role="user", content="hi"),),
                                         settings=GenerationSettings(timeout_s=0.05)))
    # A provider's own name for a cut-off answer (Anthropic's stop_reason max_tokens) is ours: asked again
    # with twice the room; reasoning blocks and a <think> block stay out of the answer, in the trace.
    cut = AIMessage(content="The most likely", response_metadata={"stop_reason": "max_tokens"})
    whole = AIMessage(content=[{"type": "reasoning", "reasoning": "troponin, then MRI"},
                               {"type": "text", "text": "<think>viral prodrome</think>Acute myocarditis."}],
                      response_metadata={"stop_reason": "end_turn"})
    recorder = CallRecorder()
    model = for_run(shared_layers(LangChainChatModel(GenericFakeChatModel(messages=iter([cut, whole]))),
                                  ModelOptions(cache=False)), recorder)
    response = await model.generate(ModelRequest(messages=(Message(role="user", content="Diagnosis?"),),
                                                 settings=GenerationSettings(max_tokens=100)))
    assert response.text == "Acute myocarditis." and response.reasoning == "troponin, then MRI\n\nviral prodrome"
    assert [(c.finish_reason, c.settings.max_tokens) for c in recorder.calls] == [("length", 100), ("end_turn", 200)]
    assert "cut off at max_tokens" in (recorder.calls[0].error or "")


def test_the_cli_runs_a_spec_writes_a_trace_replays_it_and_caches_it(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--case", str(CASE), "--model", "langchain:support.langchain_fakes:panel",
            "--format", "structured"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    [path] = list((tmp_path / "a").glob("*/*.trace.json"))
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert trace["model"] == "langchain:support.langchain_fakes:panel" and trace["status"] == "completed"
    assert len(trace["calls"]) == 8 and not any(c["cached"] for c in trace["calls"])
    capsys.readouterr()
    assert main(["replay", str(path)]) == 0
    assert "identical (8 recorded calls served, 0 model calls" in capsys.readouterr().out
    # The spec's identity is stable, so a second run is answered from the response cache.
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    [again] = list((tmp_path / "b").glob("*/*.trace.json"))
    assert all(c["cached"] for c in json.loads(again.read_text(encoding="utf-8"))["calls"])


def test_a_failing_spec_ends_the_run_failed_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--case", str(CASE), "--model", "langchain:support.langchain_fakes:broken", "--format",
                 "structured", "--out", str(tmp_path)]) == 1
    [path] = list(tmp_path.glob("*/*.trace.json"))
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert trace["status"] == "failed" and "quota exhausted" in trace["error"]


@pytest.mark.parametrize(("spec", "message"), [
    ("langchain:no_such_module_here:make", "cannot import module 'no_such_module_here' (ModuleNotFoundError"),
    ("langchain:support.langchain_fakes:missing", "module 'support.langchain_fakes' has no attribute 'missing'"),
    ("langchain:support.langchain_fakes:NOT_A_MODEL", "(of type int) is not a LangChain chat model or a function"),
    ("langchain:support.langchain_fakes:returns_text", "returns_text() returned a value of type str, not a LangChain"),
    ("langchain:support.langchain_fakes", "expected langchain:MODULE:FACTORY"),
])
def test_a_bad_spec_is_one_line_naming_it_and_exit_2(spec: str, message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "check", "--model", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"consilium: error: model spec '{spec}': ") and message in err and "\n" not in err


def test_the_cache_identity_holds_no_secret_and_an_unstable_one_is_not_cached() -> None:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(base_url="http://user:hunter2-password@127.0.0.1:9/v1",
                      api_key=SecretStr("sk-very-secret-key-123"), model="gpt-4o-mini",
                      default_headers={"Authorization": "Bearer sk-header-secret-456"})
    model = LangChainChatModel(chat)
    assert model.model_id == "langchain:ChatOpenAI(gpt-4o-mini)" and model.cacheable
    for secret in ("sk-very-secret-key-123", "hunter2-password", "sk-header-secret-456"):
        assert secret not in model.endpoint
    assert "127.0.0.1:9/v1" in model.endpoint and '"model_name":"gpt-4o-mini"' in model.endpoint
    # Another key (or password) is the same model: the cache identity holds neither.
    other = ChatOpenAI(base_url="http://me:other-password@127.0.0.1:9/v1", api_key=SecretStr("sk-another-key-789"),
                       model="gpt-4o-mini", default_headers={"Authorization": "Bearer sk-another-header"})
    assert chat_model_identity(chat) == chat_model_identity(other)

    class Unstable(FakeListChatModel):
        @property
        def _identifying_params(self) -> dict[str, Any]:
            return {"client": object()}

    options = ModelOptions(cache=True)
    assert any(isinstance(m, CachedModel) for m in _layers(shared_layers(LangChainChatModel(fakes.plain_panel()),
                                                                         options)))
    unstable = shared_layers(LangChainChatModel(Unstable(responses=["x"])), options)
    assert not any(isinstance(m, CachedModel) for m in _layers(unstable))


# --- one real OpenAI-compatible path: ChatOpenAI against llama-cpp-python's server ------------------------


class Triage(BaseModel):
    urgency: Literal["routine", "urgent", "emergency"]
    admit: bool


@pytest.mark.localhost
def test_chat_openai_against_the_local_server_answers_free_form_and_structured(
        embedded_server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSILIUM_TEST_LLAMA_URL", embedded_server_url)
    settings = GenerationSettings(max_tokens=48, temperature=0.0, seed=0, timeout_s=60)
    plain = ModelRequest(messages=(Message(role="user", content="Name one organ of the human body."),),
                         settings=settings, tag=CallTag(stage="check", role="plain"))
    structured = ModelRequest(
        messages=(Message(role="system", content="Answer in JSON."),
                  Message(role="user", content='Crushing chest pain for 40 minutes. Triage it as '
                                               '{"urgency": ..., "admit": ...}.')),
        settings=settings, schema=OutputSchema.from_model(Triage), tag=CallTag(stage="check", role="structured"))

    async def ask(*requests: ModelRequest) -> tuple[CallRecorder, list[Any]]:
        recorder = CallRecorder()
        spec = "langchain:support.langchain_fakes:local_openai"
        model = for_run(build_model(spec, ModelOptions(cache=False)), recorder)
        try:
            return recorder, [await model.generate(r) for r in requests]
        finally:
            await model.aclose()

    recorder, (text, triage) = asyncio.run(ask(plain, structured))
    assert text.text.strip() and triage.parsed == Triage.model_validate(triage.parsed).model_dump()
    # Usage as the server reported it, through ChatOpenAI's usage_metadata; the schema went as a forced tool.
    assert all(not c.usage.estimated and c.usage.input_tokens > 0 for c in recorder.calls)
    assert recorder.calls[-1].finish_reason == "tool_calls" and recorder.calls[-1].schema_name == "Triage"
    assert recorder.calls[-1].response == json.dumps(triage.parsed)
    # A second command in the same process runs its own event loop; langchain-openai's client, cached
    # process-wide, still works (every LangChain call runs on the backend's one loop).
    _, (again,) = asyncio.run(ask(plain))
    assert again.text.strip()


def test_a_handler_around_the_run_hears_each_chat_model_call_once() -> None:
    """The chat model runs in a context of its own, so a graph node's callbacks (a user's handler, LangSmith's
    tracer) hear each call once, from the observation layer with its stage and role, not a second time from
    the chat model itself (which would count its tokens twice)."""
    heard = fakes.CountingHandler()

    async def consult(case: str) -> Any:
        return await consilium.arun(case, variants=["structured"], model=fakes.panel())

    [trace] = asyncio.run(RunnableLambda(consult).ainvoke(str(CASE), config={"callbacks": [heard]}))
    assert trace.status == "completed" and heard.calls == len(trace.calls) == 8


def test_the_plain_api_in_a_running_loop_keeps_the_callers_context() -> None:
    """A notebook cell runs on a loop already running: the plain ``run`` goes to a worker thread, in the caller's
    context, so the handler of the runnable the cell is in still hears every call."""
    heard = fakes.CountingHandler()

    async def cell(case: str) -> Any:
        return consilium.run(case, variants=["structured"], model=fakes.panel())

    [trace] = asyncio.run(RunnableLambda(cell).ainvoke(str(CASE), config={"callbacks": [heard]}))
    assert trace.status == "completed" and heard.calls == len(trace.calls) == 8
