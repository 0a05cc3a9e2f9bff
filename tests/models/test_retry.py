"""The retry wrapper over the real OpenAI-compatible backend, against a scripted local server."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
from support.localserver import Behaviour, ScriptedServer, scripted_server

from consilium.errors import ModelError, TransientModelError, UserError
from consilium.models import Message, ModelRequest
from consilium.models.backends.openai_compat import OpenAICompatModel, parse_retry_after
from consilium.models.wrappers.retry import RetryingModel, RetryPolicy

REQUEST = ModelRequest(messages=(Message(role="user", content="Say hello."),))
POLICY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05)


class RecordingSleep:
    """An injected ``sleep`` that records each requested delay and only yields to the loop."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


Stack = tuple[RetryingModel, ScriptedServer, RecordingSleep]
Starter = Callable[..., AbstractAsyncContextManager[Stack]]


@pytest.fixture
def retrying() -> Starter:
    @asynccontextmanager
    async def start(behaviours: Sequence[Behaviour], policy: RetryPolicy = POLICY) -> AsyncIterator[Stack]:
        with scripted_server(behaviours) as server:
            sleep = RecordingSleep()
            model = RetryingModel(OpenAICompatModel("scripted", base_url=server.base_url, timeout_s=10),
                                  policy, sleep=sleep, seed=0)
            try:
                yield model, server, sleep
            finally:
                await model.aclose()

    return start


@pytest.mark.localhost
async def test_500_then_ok_succeeds_on_the_second_attempt(retrying: Starter) -> None:
    async with retrying([("status", 500), ("ok", "hello")]) as (model, server, sleep):
        response = await model.generate(REQUEST)
    assert response.text == "hello"
    assert server.requests == 2
    assert model.retries == 1
    assert len(sleep.delays) == 1
    assert 0 <= sleep.delays[0] <= POLICY.base_delay_s
    assert response.usage.output_tokens == 3 and not response.usage.estimated


@pytest.mark.localhost
async def test_429_honours_retry_after(retrying: Starter) -> None:
    async with retrying([("status", 429, {"Retry-After": "0.3"}), ("ok", "later")]) as (model, server, sleep):
        response = await model.generate(REQUEST)
    assert response.text == "later"
    assert server.requests == 2
    assert sleep.delays == [pytest.approx(0.3)]


@pytest.mark.localhost
async def test_retry_after_is_capped(retrying: Starter) -> None:
    policy = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_retry_after_s=1.5)
    async with retrying([("status", 503, {"Retry-After": "120"}), ("ok", "x")], policy) as (model, _, sleep):
        await model.generate(REQUEST)
    assert sleep.delays == [1.5]


@pytest.mark.localhost
async def test_dropped_connection_then_ok_succeeds(retrying: Starter) -> None:
    async with retrying([("drop",), ("ok", "back")]) as (model, server, sleep):
        response = await model.generate(REQUEST)
    assert response.text == "back"
    assert server.requests == 2
    assert model.retries == 1 and len(sleep.delays) == 1


@pytest.mark.localhost
async def test_always_500_gives_up_after_max_attempts(retrying: Starter) -> None:
    async with retrying([("status", 500)] * 5) as (model, server, sleep):
        with pytest.raises(ModelError, match=r"HTTP 500.*gave up after 3 attempts") as info:
            await model.generate(REQUEST)
    assert not isinstance(info.value, TransientModelError)  # the final error is not retried again upstream
    assert isinstance(info.value.__cause__, TransientModelError)
    assert server.requests == 3
    assert len(sleep.delays) == 2 and model.retries == 2


@pytest.mark.localhost
async def test_401_is_a_user_error_without_retry(retrying: Starter) -> None:
    async with retrying([("status", 401), ("ok", "never")]) as (model, server, sleep):
        with pytest.raises(UserError, match="401"):
            await model.generate(REQUEST)
    assert server.requests == 1
    assert sleep.delays == [] and model.retries == 0


@pytest.mark.localhost
async def test_400_is_a_model_error_without_retry(retrying: Starter) -> None:
    async with retrying([("status", 400), ("ok", "never")]) as (model, server, _):
        with pytest.raises(ModelError, match="HTTP 400") as info:
            await model.generate(REQUEST)
    assert not isinstance(info.value, TransientModelError)
    assert server.requests == 1


def test_backoff_without_retry_after_is_full_jitter_within_the_exponential_bound() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay_s=0.5, max_delay_s=20.0)
    rng = random.Random(1234)
    for attempt in range(1, 9):
        bound = min(policy.max_delay_s, policy.base_delay_s * 2 ** (attempt - 1))
        delays = [policy.delay(attempt, None, rng) for _ in range(200)]
        assert all(0 <= d <= bound for d in delays)
        assert max(delays) > bound / 2  # jitter spreads over the whole range, not a fixed value
    # Seeded: the same seed gives the same delays.
    first, second = random.Random(7), random.Random(7)
    assert [policy.delay(n, None, first) for n in range(1, 6)] == [policy.delay(n, None, second) for n in range(1, 6)]


def test_retry_after_overrides_backoff() -> None:
    policy = RetryPolicy(max_retry_after_s=10.0)
    rng = random.Random(0)
    assert policy.delay(1, 0.3, rng) == 0.3
    assert policy.delay(4, 0.0, rng) == 0.0
    assert policy.delay(1, 99.0, rng) == 10.0


@pytest.mark.parametrize(("header", "expected"), [("0.3", 0.3), ("2", 2.0), ("-1", 0.0), ("", None), (None, None),
                                                   ("Wed, 21 Oct 2015 07:28:00 GMT", None)])
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header) == expected


@pytest.mark.localhost
async def test_several_base_urls_spread_calls_over_replicas() -> None:
    from consilium.models import CallTag
    from consilium.models.factory import ModelOptions, build_model

    ok: list[Behaviour] = [("ok", "fine")] * 10
    with scripted_server(ok) as first, scripted_server(ok) as second:
        model = build_model("openai:replicated", ModelOptions(base_url=f"{first.base_url},{second.base_url}",
                                                              cache=False))
        request = ModelRequest(messages=(Message(role="user", content="hi"),), tag=CallTag(stage="check"))
        responses = await asyncio.gather(*(model.generate(request) for _ in range(8)))
        await model.aclose()
    assert all(r.text == "fine" for r in responses)
    assert first.requests >= 2 and second.requests >= 2 and first.requests + second.requests == 8
