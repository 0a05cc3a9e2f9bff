"""The ``openai:`` backend end to end against llama-cpp-python's server running the embedded model."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import BaseModel
from support.localserver import free_port

from consilium.cli import main
from consilium.errors import ModelError
from consilium.models import (
    CallRecorder,
    CallTag,
    GenerationSettings,
    Message,
    ModelOptions,
    ModelRequest,
    OutputSchema,
    build_model,
    for_run,
)
from consilium.models.wrappers import RetryPolicy

SETTINGS = GenerationSettings(max_tokens=24, temperature=0.0, seed=0, timeout_s=60)
FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02)


class Triage(BaseModel):
    urgency: Literal["routine", "urgent", "emergency"]
    admit: bool


def _options(url: str, http_client: str = "aiohttp") -> ModelOptions:
    return ModelOptions(base_url=url, cache=False, schema_dialect="json_object", retry=FAST_RETRY,
                        http_client=http_client)


#: Both transports of the openai backend (models/backends/http_transports.py) get the same tests.
TRANSPORTS = pytest.mark.parametrize("http_client", ["aiohttp", "sdk"])


def _closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.mark.localhost
@TRANSPORTS
async def test_plain_call_returns_text_and_reported_usage(embedded_server_url: str, http_client: str) -> None:
    recorder = CallRecorder()
    model = for_run(build_model("openai:any-name", _options(embedded_server_url, http_client)), recorder)
    try:
        response = await model.generate(ModelRequest(
            messages=(Message(role="user", content="Name one organ of the human body."),),
            settings=SETTINGS, tag=CallTag(stage="check", role="plain")))
    finally:
        await model.aclose()
    assert response.text.strip()
    assert response.usage.calls == 1
    assert not response.usage.estimated
    assert response.usage.input_tokens > 0
    # An answer cut off at max_tokens is asked again with twice the room (wrappers/answers.py).
    [*cut, last] = recorder.calls
    assert all(c.finish_reason == "length" for c in cut) and last.finish_reason != "length"
    assert 0 < response.usage.output_tokens <= last.settings.max_tokens
    assert response.latency_ms > 0
    assert recorder.ledger.by_role()["plain"].output_tokens == sum(c.usage.output_tokens for c in recorder.calls)


@pytest.mark.localhost
@TRANSPORTS
async def test_structured_call_returns_validated_parsed_value(embedded_server_url: str, http_client: str) -> None:
    recorder = CallRecorder()
    model = for_run(build_model("openai:local", _options(embedded_server_url, http_client)), recorder)
    schema = OutputSchema.from_model(Triage)
    try:
        response = await model.generate(ModelRequest(
            messages=(Message(role="system", content="Answer in JSON."),
                      Message(role="user", content="Crushing chest pain for 40 minutes. Triage it as "
                                                   '{"urgency": ..., "admit": ...}.')),
            settings=SETTINGS.model_copy(update={"max_tokens": 32}), schema=schema,
            tag=CallTag(stage="check", role="structured")))
    finally:
        await model.aclose()
    assert isinstance(response.parsed, dict)
    assert Triage.model_validate(response.parsed).model_dump(mode="json") == response.parsed
    assert recorder.calls and all(call.schema_name == "Triage" for call in recorder.calls)
    assert not recorder.ledger.total.estimated


@pytest.mark.localhost
@TRANSPORTS
def test_models_check_cli(embedded_server_url: str, http_client: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["models", "check", "--model", "openai:local", "--base-url", embedded_server_url,
                 "--schema-dialect", "json_object", "--max-tokens", "16", "--http-client", http_client])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "tokens/s" in out
    assert "[plain]" in out and "[structured]" in out
    assert "(reported)" in out and "(estimated)" not in out


@pytest.mark.localhost
@TRANSPORTS
async def test_unreachable_server_ends_in_a_clear_model_error(http_client: str) -> None:
    url = _closed_port_url()
    model = for_run(build_model("openai:local", _options(url, http_client)), CallRecorder())
    try:
        with pytest.raises(ModelError, match=r"connection failed.*gave up after 2 attempts") as info:
            await model.generate(ModelRequest(messages=(Message(role="user", content="hi"),), settings=SETTINGS))
    finally:
        await model.aclose()
    assert url in str(info.value)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the members of any exception group among them."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
        if isinstance(current, BaseExceptionGroup):
            pending += list(current.exceptions)


async def test_network_guard_blocks_unmarked_tests() -> None:
    """Without the ``localhost`` marker even 127.0.0.1 is out of reach."""
    with pytest.raises(RuntimeError, match="blocked"):
        socket.create_connection(("127.0.0.1", free_port()), timeout=1)

    options = ModelOptions(base_url=_closed_port_url(), cache=False, retry=RetryPolicy(max_attempts=1))
    model = build_model("openai:local", options)
    try:
        # The guard's error is no transport error: the openai client lets it through (inside anyio's
        # exception group) rather than turning it into a connection error. Either way it must surface.
        with pytest.raises((ModelError, RuntimeError, ExceptionGroup)) as info:
            await model.generate(ModelRequest(messages=(Message(role="user", content="hi"),), settings=SETTINGS))
    finally:
        await model.aclose()
    assert any(type(e).__name__ == "NetworkBlocked" and "blocked" in str(e) for e in _chain(info.value))
