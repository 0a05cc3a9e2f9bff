"""A replica pool keeps each case's calls on one replica (its prefix cache stays warm), spills a hot
replica's calls, and spreads calls without a case over the least busy; fake vLLM replicas report
cached prompt tokens that reach the trace."""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.request
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import pytest

from consilium.cases import Case, load_case
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.run import run_case
from consilium.models import CallTag, Message, ModelRequest
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.factory import ModelOptions, build_model
from consilium.models.wrappers import work_item
from consilium.models.wrappers.pool import PooledModel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from replicas import fake_replica  # noqa: E402  (benchmarks/replicas.py)

PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
CASE = load_case(ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml")


def _replicas(n: int, latency_ms: float = 0.0) -> list[ScriptedModel]:
    rules = Script.load(PANEL).rules
    return [ScriptedModel(Script(rules=rules, latency_ms=latency_ms), model_id=f"replica-{i}") for i in range(n)]


def _case(i: int) -> Case:
    return CASE.model_copy(update={"id": f"case-{i:03d}", "presentation": f"{CASE.presentation} (patient {i})"})


def _request(text: str = "hello") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), tag=CallTag(stage="vote", role="x", round=1))


async def test_each_cases_calls_go_to_one_replica_and_cases_spread_over_all() -> None:
    pool = PooledModel(_replicas(4))
    served: dict[str, set[str]] = {}
    for i in range(40):
        for trace in await run_case(_case(i), ["free-form", "structured"], RunModels(pool, pool), ConsiliumConfig(),
                                    run_id="r"):
            assert trace.status == "completed"
            served.setdefault(trace.case_id, set()).update(call.model for call in trace.calls)
    assert all(len(models) == 1 for models in served.values()), served
    homes = Counter(next(iter(models)) for models in served.values())
    # 40 cases over 4 replicas: every replica is some cases' home, none takes more than half.
    assert set(homes) == {f"replica-{i}" for i in range(4)}
    assert max(homes.values()) <= 20
    assert pool.spilled == 0


async def test_removing_a_replica_moves_only_the_cases_it_was_home_to() -> None:
    async def homes(pool: PooledModel) -> dict[str, str]:
        found = {}
        for i in range(60):
            with work_item(f"case-{i}"):
                found[f"case-{i}"] = (await pool.generate(_request())).model
        return found

    four = [ScriptedModel(Script(default="ok"), model_id=f"r{i}") for i in range(4)]
    for i, replica in enumerate(four):
        replica.endpoint = f"http://10.0.0.{i}:8000/v1"  # type: ignore[misc]  # named by endpoint, as served ones are
    before = await homes(PooledModel(four))
    after = await homes(PooledModel([four[0], four[1], four[3]]))
    moved = {case for case in before if before[case] != after[case]}
    assert moved == {case for case, home in before.items() if home == "r2"}
    assert moved  # the removed replica was home to some cases


async def test_a_hot_replica_spills_to_the_next_in_the_cases_order() -> None:
    replicas = [ScriptedModel(Script(default="ok", latency_ms=200), model_id=f"r{i}") for i in range(2)]
    pool = PooledModel(replicas)  # the rule: spill once the home has more than max(16, 1.5 x mean) in flight

    async def case_calls(n: int) -> list[str]:
        with work_item("busy-case"):
            return [r.model for r in await asyncio.gather(*(pool.generate(_request(str(k))) for k in range(n)))]

    served = Counter(await case_calls(20))
    home = served.most_common(1)[0][0]
    # Calls arrive one by one. The home takes the 1st to 17th (at most 16 in flight before each, and
    # 1.5 x mean stays at most 12); the 18th, 19th and 20th find 17 in flight at home, more than
    # max(16, 1.5 x 17 / 2), max(16, 1.5 x 18 / 2) and max(16, 1.5 x 19 / 2), and go to the other replica.
    assert served[home] == 17 and sum(served.values()) == 20
    assert pool.spilled == 3


async def test_calls_outside_a_case_go_to_the_least_busy_replica() -> None:
    replicas = [ScriptedModel(Script(default="ok", latency_ms=100), model_id=f"r{i}") for i in range(4)]
    pool = PooledModel(replicas)
    served = Counter(r.model for r in await asyncio.gather(*(pool.generate(_request(str(k))) for k in range(12))))
    assert served == {"r0": 3, "r1": 3, "r2": 3, "r3": 3}
    # The same twelve calls made for one case all stay on its replica.
    with work_item("one-case"):
        in_case = Counter(r.model for r in await asyncio.gather(*(pool.generate(_request(str(k))) for k in range(12))))
    assert len(in_case) == 1 and sum(in_case.values()) == 12


def _stats(base_url: str) -> dict[str, int]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as response:
        return dict(json.load(response))


@pytest.mark.localhost
async def test_fake_vllm_replicas_cached_tokens_reach_the_trace() -> None:
    with ExitStack() as stack:
        urls = [stack.enter_context(fake_replica(latency_ms=1.0)) for _ in range(2)]
        model = build_model("openai:fake", ModelOptions(base_url=",".join(urls), api_key="unused", cache=False,
                                                        max_concurrency=16))
        try:
            groups = await asyncio.gather(*(run_case(_case(i), ["free-form", "structured"], RunModels(model, model),
                                                     ConsiliumConfig(), run_id="r") for i in range(3)))
        finally:
            await model.aclose()
        stats = [_stats(url) for url in urls]
    traces = [t for group in groups for t in group]
    assert all(t.status == "completed" for t in traces), [t.error for t in traces]
    sent = [c for t in traces for c in t.calls if not (t.role_assignment_shared and c.stage == "role_assignment")]
    # What the servers say they served from cache is what the traces hold, call by call summed.
    assert sum(c.usage.cached_tokens for c in sent) == sum(s["cached_tokens"] for s in stats) > 0
    assert sum(c.usage.input_tokens for c in sent) == sum(s["prompt_tokens"] for s in stats)
    assert sum(t.usage.total.cached_tokens for t in traces) == sum(c.usage.cached_tokens for t in traces
                                                                    for c in t.calls)
    # A case's calls stay on one replica, so its later calls find its prefix: most prompt tokens are cached.
    assert sum(c.usage.cached_tokens for c in sent) / sum(c.usage.input_tokens for c in sent) > 0.5
