"""The base of every wrapper: it holds ``inner`` and forwards what a wrapper does not change.

A wrapper (retry, cache, limit, repair, answer check, recording) changes how a call is made, not
which model answers it, so it presents its inner model's identity: ``model_id``, ``endpoint`` (the
cache key holds it), ``supports_images``, ``stage_max_tokens`` and ``enforces_schemas`` are read from
``inner`` when the wrapper is built, ``generate`` passes the request on and ``aclose`` closes ``inner``. A subclass
states only what it changes (pydantic-ai's ``WrapperModel``). A model that spreads calls over
several models (wrappers/pool.py) is not a wrapper of one and does not use this base.
"""

from __future__ import annotations

from collections.abc import Mapping

from consilium.models.protocol import ChatModel, enforces_schemas
from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["WrapperModel"]


class WrapperModel:
    """A :class:`~consilium.models.protocol.ChatModel` around ``inner`` that changes nothing by itself."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.model_id: str = inner.model_id
        self.endpoint: str = inner.endpoint
        self.supports_images: bool = inner.supports_images
        self.stage_max_tokens: Mapping[str, int] = inner.stage_max_tokens
        self.enforces_schemas: bool = enforces_schemas(inner)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.generate(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
