"""The values that cross the model protocol: messages, settings, call tags, requests, responses."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from consilium.models.pricing import Prices
from consilium.models.structured import OutputSchema
from consilium.models.usage import Usage
from consilium.stages import check_stage

__all__ = ["CallTag", "GenerationSettings", "Message", "ModelRequest", "ModelResponse", "Stage"]

#: A model call's stage: a name someone declared (consilium/stages.py: each protocol its own, and the judges',
#: calibration's and ``models check``'s), so a misspelt stage is refused, never a new ledger key.
Stage = Annotated[str, AfterValidator(check_stage)]


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str
    images: tuple[str, ...] = Field(default=(), description="image file paths sent with this message")
    captions: tuple[str, ...] = Field(default=(), description="one caption per image, sent next to it (slides: "
                                                             "opentumorboard.txt App. B.1, B.2, C.1)")

    @model_validator(mode="after")
    def _paired(self) -> Message:
        if self.captions and len(self.captions) != len(self.images):
            raise ValueError(f"{len(self.captions)} captions for {len(self.images)} images")
        return self

    @model_serializer(mode="wrap")
    def _without_empty_captions(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A message without captions dumps as it did before captions existed, so the request hash
        # (models/wrappers/recording.py) of every older recorded call, and hence its replay, is unchanged.
        data = handler(self)
        if isinstance(data, dict) and not self.captions:
            data.pop("captions", None)
        return data


class GenerationSettings(BaseModel):
    """Sampling settings; part of the cache key, so keep them explicit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int | None = 0
    timeout_s: float = Field(default=120.0, gt=0)


class CallTag(BaseModel):
    """Where a call sits in a run: its stage, the role speaking and the round.

    Tags drive the usage ledger, the scripted backend's rules and replay's lookup.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Stage
    role: str | None = None
    round: int | None = None


class ModelRequest(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    messages: tuple[Message, ...]
    settings: GenerationSettings = GenerationSettings()
    schema_: OutputSchema | None = Field(default=None, alias="schema")
    tag: CallTag = CallTag(stage="check")

    @property
    def output_schema(self) -> OutputSchema | None:
        return self.schema_

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The JSON schema a backend should enforce, if any (a text check or an unenforced schema has none)."""
        return self.schema_.json_schema if self.schema_ is not None and self.schema_.enforce else None

    def with_messages(self, messages: tuple[Message, ...]) -> ModelRequest:
        return self.model_copy(update={"messages": messages})


class ModelResponse(BaseModel):
    """What every backend returns. ``parsed`` holds the validated JSON value when a
    schema was requested (set by the structured-output wrapper). ``text`` is the answer alone: a
    reasoning model's thinking is in ``reasoning`` (models/reasoning.py), and the request settings
    a backend left out because the model refuses them are in ``omitted_settings``."""

    model_config = ConfigDict(extra="forbid")

    text: str
    parsed: Any = None
    usage: Usage = Usage()
    latency_ms: float = 0.0
    model: str = ""
    cached: bool = False
    finish_reason: str | None = None
    reasoning: str | None = None
    omitted_settings: tuple[str, ...] = ()
    #: The answering model's prices, set by the shared stack's pricing layer (wrappers/priced.py).
    prices: Prices | None = None
