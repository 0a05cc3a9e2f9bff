"""Validates structured output and repairs it a bounded number of times.

An invalid answer goes back to the model with the validation error; after
``max_repairs`` further attempts a typed :class:`~consilium.errors.ModelOutputError`
is raised for the caller to record (never to score). Plain-text requests pass through.
"""

from __future__ import annotations

from consilium.errors import ModelOutputError
from consilium.models.protocol import ChatModel
from consilium.models.structured import OutputInvalid
from consilium.models.types import Message, ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel

__all__ = ["StructuredOutputModel", "repair_message"]


def repair_message(error: OutputInvalid, schema_name: str, instruction: str | None = None) -> str:
    """``instruction`` replaces the request for one JSON object (OutputSchema.repair, for a text check)."""
    return (f"That answer could not be used: {error}. " + (instruction or f"Reply again with only one JSON "
            f"object that matches the {schema_name} schema, with no text before or after it."))


class StructuredOutputModel(WrapperModel):
    def __init__(self, inner: ChatModel, max_repairs: int = 2) -> None:
        super().__init__(inner)
        self.max_repairs = max_repairs

    async def generate(self, request: ModelRequest) -> ModelResponse:
        schema = request.output_schema
        if schema is None:
            return await self.inner.generate(request)
        attempt_request = request
        last_error: OutputInvalid | None = None
        last_text = ""
        for _ in range(self.max_repairs + 1):
            response = await self.inner.generate(attempt_request)
            if response.parsed is not None:  # already validated (by the recording layer)
                return response
            try:
                parsed = schema.validate(response.text)
            except OutputInvalid as exc:
                last_error, last_text = exc, response.text
                attempt_request = attempt_request.with_messages((
                    *attempt_request.messages,
                    Message(role="assistant", content=response.text),
                    Message(role="user", content=repair_message(exc, schema.name, schema.repair)),
                ))
                continue
            return response.model_copy(update={"parsed": parsed})
        tag = request.tag
        raise ModelOutputError(
            f"stage {tag.stage} (role {tag.role}, round {tag.round}): invalid {schema.name} output after "
            f"{self.max_repairs + 1} attempts: {last_error}",
            stage=tag.stage, last_text=last_text,
        )
