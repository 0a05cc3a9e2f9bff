"""Reasoning models through the ``openai:`` backend: the request a reasoning model
accepts, and its reasoning kept out of the answer but in the trace, with its tokens counted.

A local OpenAI-compatible server on 127.0.0.1 answers each request with the next scripted message
(``reasoning_content`` as vLLM's reasoning parsers and DeepSeek send it, or a ``<think>`` block in
the content as Qwen3 and DeepSeek-R1 do without one) and keeps every request body it received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from support.localserver import JsonHandler, QuietServer, serving

from consilium.cli import main
from consilium.errors import UserError
from consilium.models import (
    CallRecorder,
    CallTag,
    GenerationSettings,
    Message,
    ModelOptions,
    ModelRequest,
    OutputSchema,
    Usage,
    build_model,
    for_run,
)
from consilium.models.backends.replay import ReplayModel
from consilium.models.reasoning import is_openai_reasoning_model, request_rule, split_reasoning
from consilium.models.tokens import count_tokens
from consilium.models.wrappers import CallRecord

SETTINGS = GenerationSettings(max_tokens=200, temperature=0.0, seed=0, timeout_s=10)
ALL_SAMPLING = ["temperature", "top_p", "seed"]


class Triage(BaseModel):
    urgency: Literal["routine", "urgent", "emergency"]
    admit: bool


@dataclass
class Server:
    """Each request gets the next scripted ``(message, usage)``; ``bodies`` are the requests received."""

    answers: list[tuple[dict[str, Any], dict[str, Any]]]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""


def _handler(state: Server) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            index = len(state.bodies)
            state.bodies.append(body)
            if index >= len(state.answers):
                self._send_json(500, {"error": {"message": "script exhausted"}})
                return
            message, usage = state.answers[index]
            self._send_json(200, {
                "id": f"chatcmpl-{index}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
                "usage": usage})

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[Any] = []

    def start(answers: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> Server:
        state = Server(list(answers))
        context = serving(QuietServer(("127.0.0.1", 0), _handler(state)))
        state.base_url = context.__enter__()
        servers.append(context)
        return state

    yield start
    for context in servers:
        context.__exit__(None, None, None)


def _usage(prompt: int = 11, completion: int = 40, reasoning: int | None = None) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


async def _call(spec: str, url: str, *, schema: OutputSchema | None = None, http_client: str = "aiohttp",
                replay: list[CallRecord] | None = None, **options: Any) -> tuple[Any, CallRecorder]:
    recorder = CallRecorder()
    backend = ReplayModel(replay) if replay is not None else \
        build_model(spec, ModelOptions(base_url=url, cache=False, http_client=http_client, **options))
    model = for_run(backend, recorder)
    try:
        response = await model.generate(ModelRequest(
            messages=(Message(role="user", content="A 58-year-old with chest pain: how urgent?"),),
            settings=SETTINGS, schema=schema, tag=CallTag(stage="check", role="r")))
    finally:
        await model.aclose()
    return response, recorder


@pytest.mark.localhost
@pytest.mark.parametrize("http_client", ["aiohttp", "sdk"])
async def test_an_o_series_model_gets_max_completion_tokens_and_no_sampling_settings(
        serve: Any, http_client: str) -> None:
    server = serve([({"content": "Urgent."}, _usage())])
    response, recorder = await _call("openai:o3-mini", server.base_url, http_client=http_client)
    [body] = server.bodies
    assert body["max_completion_tokens"] == 200 and "max_tokens" not in body
    assert not {"temperature", "top_p", "seed"} & body.keys()
    assert response.text == "Urgent."
    [call] = recorder.calls
    # The trace keeps the settings the run asked for and says which of them were not sent.
    assert call.settings.temperature == 0.0 and call.omitted_settings == ALL_SAMPLING


@pytest.mark.localhost
async def test_a_plain_model_is_sent_everything_as_before(serve: Any) -> None:
    server = serve([({"content": "Urgent."}, _usage())])
    _, recorder = await _call("openai:Qwen/Qwen3-8B", server.base_url)
    [body] = server.bodies
    assert body["max_tokens"] == 200 and "max_completion_tokens" not in body
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.0, 1.0, 0)
    assert recorder.calls[0].omitted_settings == []


@pytest.mark.localhost
async def test_the_rule_can_be_overridden_both_ways(serve: Any) -> None:
    server = serve([({"content": "a"}, _usage()), ({"content": "b"}, _usage())])
    # A gateway's own name for a reasoning model: the name says nothing, the options say it all.
    _, gateway = await _call("openai:house-reasoner", server.base_url, token_param="max_completion_tokens",
                             omit_settings=("temperature",))
    # An o-series name served by something that takes the classic parameters.
    await _call("openai:o1-lookalike", server.base_url, token_param="max_tokens", omit_settings=())
    first, second = server.bodies
    assert first["max_completion_tokens"] == 200 and "temperature" not in first and first["seed"] == 0
    assert second["max_tokens"] == 200 and second["temperature"] == 0.0
    assert gateway.calls[0].omitted_settings == ["temperature"]


@pytest.mark.localhost
async def test_reasoning_content_is_kept_out_of_the_answer_and_its_tokens_counted(serve: Any) -> None:
    thinking = "Chest pain in a 58-year-old: rule out ACS first."
    server = serve([({"content": "Urgent: an ECG now.", "reasoning_content": thinking},
                     _usage(completion=60, reasoning=48))])
    response, recorder = await _call("openai:deepseek-ai/DeepSeek-R1", server.base_url)
    assert response.text == "Urgent: an ECG now." and response.reasoning == thinking
    [call] = recorder.calls
    assert call.response == "Urgent: an ECG now." and call.reasoning == thinking
    assert call.usage == Usage(input_tokens=11, output_tokens=60, reasoning_tokens=48, calls=1)
    assert recorder.ledger.total.reasoning_tokens == 48
    # As a trace file stores and reads it, and as replay serves it again.
    assert CallRecord.model_validate_json(call.model_dump_json()) == call
    replayed, again = await _call("openai:unused", server.base_url, replay=[call])
    assert replayed.reasoning == thinking and again.calls[0].reasoning == thinking


@pytest.mark.localhost
async def test_a_structured_answer_after_a_think_block_parses(serve: Any) -> None:
    thinking = "ST elevation means a STEMI.\nHe must be admitted."
    content = f"<think>\n{thinking}\n</think>\n\n" + json.dumps({"urgency": "emergency", "admit": True})
    server = serve([({"content": content}, _usage(completion=70))])
    response, recorder = await _call("openai:Qwen/Qwen3-8B", server.base_url,
                                     schema=OutputSchema.from_model(Triage))
    assert response.parsed == {"urgency": "emergency", "admit": True}
    [call] = recorder.calls
    assert call.error is None and "<think>" not in call.response and call.reasoning == thinking
    # The server did not say how many were reasoning: counted from the text, and marked estimated.
    assert call.usage.reasoning_tokens == count_tokens(thinking) and call.usage.estimated
    assert call.usage.output_tokens == 70


@pytest.mark.localhost
def test_models_check_takes_the_overrides_from_a_model_config_and_its_flag(
        serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = json.dumps({"specialty": "cardiology", "urgency": "emergency"})
    server = serve([({"content": "<think>inferior STEMI</think>Inferior STEMI."}, _usage(reasoning=5)),
                    ({"content": answer, "reasoning_content": "cath lab"}, _usage(reasoning=3))])
    config = tmp_path / "reasoner.yaml"
    config.write_text(f"spec: openai:my-reasoner\nbase_url: {server.base_url}\nomit_settings: [temperature, top_p]\n")
    assert main(["models", "check", "--model-config", str(config), "--token-param", "max_completion_tokens"]) == 0
    assert all(b["max_completion_tokens"] and "temperature" not in b and b["seed"] == 0 for b in server.bodies)
    shown = capsys.readouterr().out
    assert "-> Inferior STEMI." in shown and "<think>" not in shown


def test_a_bad_override_in_a_model_config_names_its_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("spec: openai:o3\nbase_url: http://127.0.0.1:9/v1\nomit_settings: [max_tokens]\n")
    assert main(["models", "check", "--model-config", str(config)]) == 2
    assert f"{config}: omit_settings.0:" in capsys.readouterr().err
    with pytest.raises(UserError, match="token parameter"):
        build_model("openai:o3", ModelOptions(base_url="http://127.0.0.1:9/v1", token_param="max_output"))


@pytest.mark.parametrize(("name", "reasoning"), [
    ("o1", True), ("o3-mini", True), ("o4-mini-2025-04-16", True), ("openai/o3", True), ("gpt-5", True),
    ("gpt-5-mini", True), ("gpt-5.1", True), ("gpt-5-chat-latest", False), ("gpt-4o-mini", False),
    ("olmo-2-7b", False), ("deepseek-ai/DeepSeek-R1", False), ("Qwen/Qwen3-8B", False)])
def test_the_name_rule(name: str, reasoning: bool) -> None:
    assert is_openai_reasoning_model(name) is reasoning
    param, omitted = request_rule(name)
    assert (param == "max_completion_tokens") is reasoning and bool(omitted) is reasoning


@pytest.mark.parametrize(("content", "reasoning", "answer"), [
    ("<think>a</think>b", "a", "b"),
    ("  <think>\n a \n</think>\n\n{\"x\": 1}", "a", "{\"x\": 1}"),
    ("a thought</think>\nthe answer", "a thought", "the answer"),  # DeepSeek-R1: the prompt opened the block
    ("<think>cut off while thinking", "cut off while thinking", ""),
    ("<think></think>answer", None, "answer"),
    ("plain answer", None, "plain answer"),
    ("an answer that mentions <think> and </think>", None, "an answer that mentions <think> and </think>"),
])
def test_split_reasoning(content: str, reasoning: str | None, answer: str) -> None:
    assert split_reasoning(content) == (reasoning, answer)


def test_usage_adds_reasoning_tokens_and_old_records_read() -> None:
    total = Usage(output_tokens=10, reasoning_tokens=4, calls=1) + Usage(output_tokens=5, reasoning_tokens=1, calls=1)
    assert total.reasoning_tokens == 5 and Usage.total([total, Usage()]).reasoning_tokens == 5
    old = {"index": 0, "stage": "check", "model": "m", "messages": [], "request_hash": "h", "response": "r",
           "settings": GenerationSettings().model_dump(), "latency_ms": 0.0, "started_at": 0.0,
           "usage": {"input_tokens": 1, "output_tokens": 2, "cached_tokens": 0, "calls": 1, "estimated": False}}
    call = CallRecord.model_validate(old)
    assert call.reasoning is None and call.omitted_settings == [] and call.usage.reasoning_tokens == 0
