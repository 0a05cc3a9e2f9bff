"""Spread calls over several replicas of one model (e.g. several ``vllm serve`` endpoints).

Each call goes to the replica with the fewest calls in flight (ties: the first); a retried call
may land on another replica. The pool presents one model id and one cache identity, so a response
cached from one replica serves them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["PooledModel"]


class PooledModel:
    def __init__(self, replicas: Sequence[ChatModel]) -> None:
        if not replicas:
            raise ValueError("a pool needs at least one replica")
        self.replicas = list(replicas)
        self.model_id = replicas[0].model_id
        self.endpoint = "pool(" + ",".join(r.endpoint for r in replicas) + ")"
        self.supports_images = all(r.supports_images for r in replicas)
        self.stage_max_tokens = replicas[0].stage_max_tokens
        self.in_flight = [0] * len(replicas)
        self.served = [0] * len(replicas)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        index = min(range(len(self.replicas)), key=lambda i: self.in_flight[i])
        self.in_flight[index] += 1
        try:
            return await self.replicas[index].generate(request)
        finally:
            self.in_flight[index] -= 1
            self.served[index] += 1

    async def aclose(self) -> None:
        for replica in self.replicas:
            await replica.aclose()
