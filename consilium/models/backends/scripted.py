"""``scripted:FILE``: deterministic responses chosen by stage, role and round.

A real backend for tests, demos and the CLI (STYLE.md 2). The file format is
documented in docs/models.md. Rules are tried in order; the first whose
filters (stage, role, round, contains, contains_all, schema_contains, constrained, seed) match and which is not
used up answers. ``{role}``, ``{round}`` and
``{stage}`` in a response are replaced by the call's tag.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from consilium.datafiles import load_data_file
from consilium.errors import ModelError
from consilium.models.protocol import NO_STAGE_LIMITS
from consilium.models.tokens import count_message_tokens, count_tokens
from consilium.models.types import CallTag, ModelRequest, ModelResponse
from consilium.models.usage import Usage
from consilium.stages import scripted_rules

__all__ = ["Responder", "Script", "ScriptRule", "ScriptedModel"]

#: A Python responder: request in, text or a JSON-able value out (None = no answer).
Responder = Callable[[ModelRequest], Any]


class ScriptRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str | None = None
    role: str | None = None
    round: int | None = None
    contains: str | None = Field(default=None, description="substring the last user message must contain")
    contains_all: list[str] | None = Field(default=None, description="substrings the last user message must all "
                                                                      "contain (e.g. a case's marker and a criterion)")
    schema_contains: str | None = Field(default=None, description="substring the request's JSON schema (as JSON "
                                                                  "text) must contain, e.g. an enum's name: plays a "
                                                                  "model held to the schema's choices")
    seed: int | None = Field(default=None, description="match only calls whose settings carry this seed (plays a "
                                                       "model that samples: another seed, another answer)")
    constrained: bool | None = Field(default=None, description="match only calls whose schema is (true) or is not "
                                                               "(false) enforced: plays a model that keeps a schema "
                                                               "only under a grammar")
    times: int | None = Field(default=None, ge=1, description="answer at most this many calls")
    response: str | None = None
    json_: Any = Field(default=None, alias="json")
    responses: list[Any] | None = Field(default=None, description="served in turn; the last one repeats")
    finish_reason: str = Field(default="stop", min_length=1,
                               description='reported with the answer; "length" plays an answer cut off at max_tokens')
    fail: Literal["model", "internal"] | None = Field(
        default=None, description="fail the call instead of answering: 'model' raises a ModelError (a backend "
                                  "failure), 'internal' a RuntimeError (a stand-in for a bug, to test the CLI's "
                                  "internal-error path)")

    @model_validator(mode="after")
    def _one_answer(self) -> ScriptRule:
        given = [x is not None for x in (self.response, self.json_, self.responses, self.fail)]
        if sum(given) != 1:
            raise ValueError("a rule needs exactly one of response, json, responses, fail")
        if self.responses is not None and not self.responses:
            raise ValueError("responses must not be empty")
        return self

    def matches(self, tag: CallTag, last_user: str, seed: int | None = None, schema: str = "",
                constrained: bool = False) -> bool:
        return (
            (self.seed is None or self.seed == seed)
            and (self.constrained is None or self.constrained == constrained)
            and (self.schema_contains is None or self.schema_contains in schema)
            and (self.stage is None or self.stage == tag.stage)
            and (self.role is None or self.role == tag.role)
            and (self.round is None or self.round == tag.round)
            and (self.contains is None or self.contains in last_user)
            and all(part in last_user for part in self.contains_all or ())
        )

    def answer(self, index: int) -> Any:
        if self.responses is not None:
            return self.responses[min(index, len(self.responses) - 1)]
        return self.response if self.response is not None else self.json_


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = "scripted"
    images: bool = Field(default=False, description="accept image parts (as a vision model would)")
    latency_ms: float = Field(default=0.0, ge=0, description="wait this long per call, as a served model would")
    n_ctx: int | None = Field(default=None, ge=1, description="play a model with this context window in tokens: a "
                                                       "prompt that fills it fails, as llama.cpp's does")
    enforces_schemas: bool = Field(default=False, description="play a backend that enforces schemas (a grammar, "
                                                              "response_format): judges ask it constrained first")
    rules: list[ScriptRule] = []
    declared_rules: bool = Field(default=False, description="after its own rules, answer a call with the rules "
                                                            "the protocol owning its stage declares "
                                                            "(Protocol.scripted): a panel that plays any protocol")
    default: Any = None

    @classmethod
    def load(cls, path: str | Path) -> Script:
        return load_data_file(Path(path), cls, "scripted model file")


def _render(value: Any, tag: CallTag) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return (text.replace("{role}", tag.role or "").replace("{round}", "" if tag.round is None else str(tag.round))
            .replace("{stage}", tag.stage))


class ScriptedModel:
    """Answers from a :class:`Script` or a Python responder; usage counted with tiktoken."""

    endpoint = "scripted"
    stage_max_tokens = NO_STAGE_LIMITS

    def __init__(self, script: Script | None = None, *, responder: Responder | None = None,
                 model_id: str | None = None) -> None:
        self.script = script or Script()
        self.responder = responder
        self.model_id = model_id or self.script.model
        self.supports_images = self.script.images
        self.n_ctx = self.script.n_ctx
        self.enforces_schemas = self.script.enforces_schemas
        self._used: dict[int | tuple[str, int], int] = {}
        self.calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        return cls(Script.load(path))

    def _pick(self, request: ModelRequest) -> tuple[Any, str]:
        """The answer and its finish reason."""
        if self.responder is not None:
            value = self.responder(request)
            if value is not None:
                return value, "stop"
        users = [m.content for m in request.messages if m.role == "user"]
        last_user = users[-1] if users else ""
        given = request.output_schema.json_schema if request.output_schema is not None else None
        schema = json.dumps(given) if given is not None else ""
        rules: list[tuple[int | tuple[str, int], ScriptRule]] = list(enumerate(self.script.rules))
        if self.script.declared_rules:  # keyed apart from the file's own rules, for their ``times``
            rules += [((request.tag.stage, i), ScriptRule.model_validate(r))
                      for i, r in enumerate(scripted_rules(request.tag.stage))]
        for index, rule in rules:
            used = self._used.get(index, 0)
            seed = request.settings.seed
            if (rule.times is None or used < rule.times) and rule.matches(request.tag, last_user, seed, schema,
                                                                          request.json_schema is not None):
                self._used[index] = used + 1
                if rule.fail == "model":
                    raise ModelError(f"scripted model {self.model_id!r}: rule {index} fails this call")
                if rule.fail == "internal":
                    raise RuntimeError(f"scripted model {self.model_id!r}: rule {index} stands in for a bug")
                return rule.answer(used), rule.finish_reason
        if self.script.default is not None:
            return self.script.default, "stop"
        tag = request.tag
        raise ModelError(f"scripted model {self.model_id!r}: no rule answers stage={tag.stage} "
                         f"role={tag.role} round={tag.round}")

    async def generate(self, request: ModelRequest) -> ModelResponse:
        if not self.supports_images and any(m.images for m in request.messages):
            # As a text-only server would: an image part sent to it is an error, never silently dropped.
            raise ModelError(f"scripted model {self.model_id!r} does not accept images (set images: true)")
        prompt_tokens = count_message_tokens(list(request.messages))
        if self.n_ctx is not None and prompt_tokens >= self.n_ctx:
            raise ModelError(f"scripted model {self.model_id!r}: the prompt has {prompt_tokens} tokens, "
                             f"the context window {self.n_ctx}")
        value, finish_reason = self._pick(request)
        text = _render(value, request.tag)
        if self.script.latency_ms:
            await asyncio.sleep(self.script.latency_ms / 1000)
        self.calls += 1
        usage = Usage(input_tokens=prompt_tokens, output_tokens=count_tokens(text),
                      calls=1, estimated=True)
        return ModelResponse(text=text, usage=usage, latency_ms=self.script.latency_ms, model=self.model_id,
                             finish_reason=finish_reason)

    async def aclose(self) -> None:
        return None
