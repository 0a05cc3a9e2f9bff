"""The one model protocol every backend and wrapper implements (STYLE.md 1)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["NO_STAGE_LIMITS", "ChatModel", "enforces_schemas"]

#: The ``stage_max_tokens`` of a model that keeps every request's ``max_tokens``.
NO_STAGE_LIMITS: Mapping[str, int] = MappingProxyType({})


@runtime_checkable
class ChatModel(Protocol):
    """One async call in, one response out.

    ``model_id`` names the model as it should appear in traces; ``endpoint``
    identifies where and how it is served, everything besides the request that
    changes its answers (the cache key holds it); ``supports_images`` says
    whether image parts of a message reach the model; ``stage_max_tokens`` is
    the model's own output budget per stage (a first attempt gets the smaller of
    it and the request's ``max_tokens``; see wrappers/answers.py), empty for most;
    ``enforces_schemas`` says whether a request's enforced JSON schema constrains
    decoding (a grammar, ``response_format``, guided decoding, a chat model's
    structured output) rather than only being validated afterwards: a judge asks
    such a model under the schema from its first attempt (consilium/judges/asking.py).
    """

    model_id: str
    endpoint: str
    supports_images: bool
    stage_max_tokens: Mapping[str, int]
    enforces_schemas: bool

    async def generate(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...


def enforces_schemas(model: object) -> bool:
    """``model.enforces_schemas``; a model object made before the protocol had it (the API takes one as it
    is given) counts as one that does not enforce schemas, so it is asked as it was before."""
    return getattr(model, "enforces_schemas", False) is True
