"""Every answer with its secrets masked as it comes from the backend, before anything holds it.

A server may echo what it was sent — the request's ``Authorization`` header, a key in the URL — in a
*successful* answer, not only in an error. Masked here, innermost of the shared layers (factory.py), the
answer is masked for everything that holds it from then on: the response cache, the run's state (and so
the checkpoint of a person's run), the traces, LangSmith's runs and OpenTelemetry's spans, the API's
return values. Errors are masked where they are made (each backend's message, consilium/redact.py).
"""

from __future__ import annotations

from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel
from consilium.redact import redact_value

__all__ = ["MaskedModel", "mask_response"]


def mask_response(response: ModelResponse) -> ModelResponse:
    """``response`` with every known secret masked in every string it holds (its text, reasoning, model
    name, finish reason, a parsed value: whatever the server sent); itself when it holds none."""
    masked: ModelResponse = redact_value(response)
    return masked


class MaskedModel(WrapperModel):
    """Answers with every known key and URL credential masked (consilium/redact.py)."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return mask_response(await self.inner.generate(request))
