"""The pricing layer: every answer of a priced model carries its prices, so each recorded call does.

The outermost shared layer (consilium/models/factory.py), around the response cache: an answer served
from the cache is stamped with the prices of the model now asked, which is what its usage as generated
would cost (models/pricing.py).
"""

from __future__ import annotations

from consilium.models.pricing import Prices
from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel

__all__ = ["PricedModel"]


class PricedModel(WrapperModel):
    """``inner`` whose responses carry ``prices`` (US dollars per million tokens)."""

    def __init__(self, inner: ChatModel, prices: Prices) -> None:
        super().__init__(inner)
        self.prices = prices

    async def generate(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.generate(request)
        return response.model_copy(update={"prices": self.prices})
