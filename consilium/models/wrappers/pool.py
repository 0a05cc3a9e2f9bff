"""Spread calls over several replicas of one model (e.g. several ``vllm serve`` endpoints).

A case's calls share a long prefix (the system prompt and the case), which a server such as vLLM
keeps in its prefix cache; sent to another replica, that prefix is computed again. So a call made
for a case (a work item with a key, wrappers/limit.py) goes to the case's replica, chosen by
rendezvous hashing of the case id over the replicas' endpoints: every case has its own order of
the replicas, the first being its home, and adding or removing a replica moves only the cases whose
home it was. A load guard keeps a replica that drew many busy cases from queueing them: when the
home replica has more than ``max(16, 1.5 × mean)`` calls in flight (the mean over all replicas,
this call not counted), the call spills to the next replica in the case's order within that bound,
or, when none is, to the least busy. The floor: a server such as vLLM batches that many sequences
at little more than the cost of one, so a replica below it is not hot, and one case's parallel
calls stay together on a quiet pool. The factor stays below 2 so that the guard also works for two
replicas (there the home's calls can never pass 2 × mean). On benchmarks/replicas.py (32 calls in
flight, 4 replicas) a floor of 8 spilled 30–88 calls per cohort and lost 3–6 points of cached
share against one replica; 16 spilled 0–24 and lost 0–3.4.
A call outside a case goes to the least busy replica (ties: the first). A retried call is routed
again. The pool presents one model id and one cache identity, so a response cached from one replica
serves them all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from consilium.models.protocol import ChatModel, enforces_schemas
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.limit import current_work_key

__all__ = ["SPILL_FACTOR", "SPILL_FLOOR", "PooledModel", "rendezvous_order", "spill_threshold"]

#: A home replica takes a case's call unless it already has more than this many times the mean in flight
SPILL_FACTOR = 1.5
#: ... and this many (one case's parallel opinions stay together on a quiet pool).
SPILL_FLOOR = 16


def _score(key: str, replica: str) -> int:
    digest = hashlib.blake2b(f"{key}\x00{replica}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous_order(key: str, replicas: Sequence[str]) -> list[int]:
    """The replicas' indices in ``key``'s order (highest random weight first; ties by index)."""
    return sorted(range(len(replicas)), key=lambda i: (-_score(key, replicas[i]), i))


def spill_threshold(in_flight: Sequence[int], floor: int = SPILL_FLOOR, factor: float = SPILL_FACTOR) -> float:
    """The most calls a home replica may have in flight and still take one more of its cases' calls."""
    return max(floor, factor * sum(in_flight) / len(in_flight))


class PooledModel:
    def __init__(self, replicas: Sequence[ChatModel], *, spill_floor: int = SPILL_FLOOR,
                 spill_factor: float = SPILL_FACTOR) -> None:
        if not replicas:
            raise ValueError("a pool needs at least one replica")
        self.replicas = list(replicas)
        self.model_id = replicas[0].model_id
        self.endpoint = "pool(" + ",".join(r.endpoint for r in replicas) + ")"
        self.supports_images = all(r.supports_images for r in replicas)
        self.stage_max_tokens = replicas[0].stage_max_tokens
        # A schema is enforced by the pool only if every replica enforces it: any one may answer a call.
        self.enforces_schemas = all(enforces_schemas(r) for r in replicas)
        self.spill_floor, self.spill_factor = spill_floor, spill_factor
        self.in_flight = [0] * len(replicas)
        self.served = [0] * len(replicas)
        #: Calls of a case that went to a replica other than the case's home (the load guard).
        self.spilled = 0
        # Each replica's name in the hash: its endpoint, with its position when two share one.
        self._names = [r.endpoint if [x.endpoint for x in replicas].count(r.endpoint) == 1 else f"{i}:{r.endpoint}"
                       for i, r in enumerate(replicas)]

    def choose(self, key: str | None) -> int:
        """The replica for a call of the case ``key`` (None: a call outside any case)."""
        least_busy = min(range(len(self.replicas)), key=lambda i: self.in_flight[i])
        if key is None or len(self.replicas) == 1:
            return least_busy
        order = rendezvous_order(key, self._names)
        bound = spill_threshold(self.in_flight, self.spill_floor, self.spill_factor)
        index = next((i for i in order if self.in_flight[i] <= bound), least_busy)
        if index != order[0]:
            self.spilled += 1
        return index

    async def generate(self, request: ModelRequest) -> ModelResponse:
        index = self.choose(current_work_key())
        self.in_flight[index] += 1
        try:
            return await self.replicas[index].generate(request)
        finally:
            self.in_flight[index] -= 1
            self.served[index] += 1

    async def aclose(self) -> None:
        for replica in self.replicas:
            await replica.aclose()
