"""A bound on concurrent calls to one backend."""

from __future__ import annotations

import asyncio

from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["ConcurrencyLimitedModel"]


class ConcurrencyLimitedModel:
    def __init__(self, inner: ChatModel, max_concurrency: int) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.inner = inner
        self.model_id = inner.model_id
        self.endpoint = inner.endpoint
        self.supports_images = inner.supports_images
        self.max_concurrency = max_concurrency
        self._semaphore: asyncio.Semaphore | None = None
        self.in_flight = 0
        self.peak_in_flight = 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        # Created lazily so the semaphore binds to the running loop.
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        async with self._semaphore:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                return await self.inner.generate(request)
            finally:
                self.in_flight -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()
