"""Bounded retries with exponential backoff and full jitter for transient failures.

Retries timeouts, 429 (honouring Retry-After, capped), 5xx and dropped
connections, i.e. every :class:`~consilium.errors.TransientModelError`.
Anything else passes straight through.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from consilium.errors import ModelError, TransientModelError
from consilium.log import get_logger
from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel

__all__ = ["RetryPolicy", "RetryingModel"]

log = get_logger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        return rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))


class RetryingModel(WrapperModel):
    def __init__(self, inner: ChatModel, policy: RetryPolicy | None = None, *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, seed: int | None = None) -> None:
        super().__init__(inner)
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._rng = random.Random(seed)
        self.retries = 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        attempt = 1
        while True:
            try:
                return await self.inner.generate(request)
            except TransientModelError as exc:
                if attempt >= self.policy.max_attempts:
                    raise ModelError(f"{exc} (gave up after {attempt} attempts)") from exc
                wait = self.policy.delay(attempt, exc.retry_after, self._rng)
                log.warning("model_call_retry", stage=request.tag.stage, role=request.tag.role,
                            attempt=attempt, error=str(exc), wait_s=round(wait, 3))
                self.retries += 1
                await self._sleep(wait)
                attempt += 1
