"""The one model protocol every backend and wrapper implements (STYLE.md 1)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["ChatModel"]


@runtime_checkable
class ChatModel(Protocol):
    """One async call in, one response out.

    ``model_id`` names the model as it should appear in traces; ``endpoint``
    distinguishes the same model served from different places (cache key);
    ``supports_images`` says whether image parts of a message reach the model.
    """

    model_id: str
    endpoint: str
    supports_images: bool

    async def generate(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...
