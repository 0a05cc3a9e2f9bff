"""Replica benchmark: the share of prompt tokens served from each replica's prefix cache, 1 vs N replicas.

    .venv/bin/python benchmarks/replicas.py [--cases 8] [--concurrency 32] [--replicas 4]

Each replica is benchmarks/fakeserver.py in its own process simulating vLLM's prefix cache
(16-token blocks, chained hashes, an LRU of blocks) and reporting
``usage.prompt_tokens_details.cached_tokens`` as vLLM does. A cohort (both formats of every case)
runs against one replica and against a pool of N (``openai:`` with comma-separated base URLs,
consilium/models/factory.py), and the cached share is read back from the traces.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from workload import cases, fake_server  # noqa: E402  (a script beside workload.py, run from anywhere)

from consilium import aio  # noqa: E402
from consilium.graphs.base import RunModels  # noqa: E402
from consilium.graphs.consilium.config import ConsiliumConfig  # noqa: E402
from consilium.graphs.consilium.run import run_case  # noqa: E402
from consilium.models.factory import ModelOptions, build_model  # noqa: E402
from consilium.models.wrappers.pool import PooledModel  # noqa: E402

__all__ = ["cached_share", "fake_replica", "replica_cache"]

#: Each replica's cache, in 16-token blocks (about 130k tokens: a modest GPU's KV cache).
CACHE_BLOCKS = 8192


def fake_replica(latency_ms: float = 20.0, cache_blocks: int = CACHE_BLOCKS,
                 rules: list[dict[str, Any]] | None = None) -> AbstractContextManager[str]:
    """One benchmarks/fakeserver.py with a simulated prefix cache in its own process; yields its base URL."""
    return fake_server(latency_ms, rules, ("--prefix-cache-blocks", str(cache_blocks)))


def cached_share(traces: list[Any]) -> float:
    """Cached prompt tokens over prompt tokens, from the traces' calls (a copied shared assignment once)."""
    prompt = cached = 0
    for trace in traces:
        for call in trace.calls:
            if trace.role_assignment_shared and call.stage == "role_assignment":
                continue  # copied from the other format's trace, not sent again
            prompt += call.usage.input_tokens
            cached += call.usage.cached_tokens
    return cached / prompt if prompt else 0.0


def _pool(model: Any) -> PooledModel | None:
    while model is not None and not isinstance(model, PooledModel):
        model = getattr(model, "inner", None)
    return model


async def _cohort(urls: list[str], n_cases: int, concurrency: int) -> tuple[list[Any], int]:
    model = build_model("openai:fake", ModelOptions(base_url=",".join(urls), api_key="unused",
                                                    max_concurrency=concurrency, cache=False))
    gate = asyncio.Semaphore(concurrency)  # as benchmarks/workload.py's cohort: this many cases and calls in flight

    async def one(case: Any) -> list[Any]:
        async with gate:
            return await run_case(case, ["free-form", "structured"], RunModels(model, model), ConsiliumConfig(),
                                  run_id="replicas")

    pool = _pool(model)
    try:
        groups = await asyncio.gather(*(one(c) for c in cases(n_cases)))
    finally:
        await model.aclose()
    traces = [t for group in groups for t in group]
    failed = [t.error for t in traces if t.status != "completed"]
    if failed:
        raise RuntimeError(f"{len(failed)} benchmark runs failed, e.g. {failed[0]}")
    return traces, pool.spilled if pool is not None else 0


def replica_cache(n_cases: int = 8, concurrency: int = 32, replicas: int = 4) -> list[dict[str, Any]]:
    """The cached share on one replica and on ``replicas``, each on fresh servers (empty caches)."""
    rows = []
    for count in (1, replicas):
        with ExitStack() as stack:
            urls = [stack.enter_context(fake_replica()) for _ in range(count)]
            traces, spilled = aio.run(_cohort(urls, n_cases, concurrency))
        rows.append({"replicas": count, "cases": n_cases, "calls": sum(len(t.calls) for t in traces),
                     "spilled": spilled, "cached_share": cached_share(traces)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--replicas", type=int, default=4)
    args = parser.parse_args()
    rows = replica_cache(args.cases, args.concurrency, args.replicas)
    for row in rows:
        print(f"{row['replicas']} replica(s): {row['cases']} cases, {row['calls']} calls ({row['spilled']} spilled "
              f"off their case's replica), {row['cached_share']:.1%} of prompt tokens served from the prefix cache")
    print(f"difference: {(rows[0]['cached_share'] - rows[-1]['cached_share']) * 100:.1f} points (target ≤ 5)")


if __name__ == "__main__":
    main()
