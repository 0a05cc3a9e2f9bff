"""The library's check of a model backend: one plain and one schema-constrained call, with timings and usage,
and a probe of whether the backend enforces a schema (a call only an enforced schema can answer validly), what
``consilium models check`` does, returned as :class:`ModelCheck` (docs/models.md)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from consilium.api.options import options_of
from consilium.api.sync import sync_twin
from consilium.errors import ModelError, ModelOutputError
from consilium.models import CallRecorder, CallTag, ChatModel, GenerationSettings, Message, ModelRequest, OutputSchema
from consilium.models.factory import ModelOptions, for_run
from consilium.models.protocol import enforces_schemas
from consilium.redact import clip

__all__ = ["PROBE_CODE", "CheckAnswer", "CheckOptions", "Enforcement", "ModelCheck", "acheck_model", "cache_note",
           "check_model", "enforcement_line"]


class CheckAnswer(BaseModel):
    """The schema of the constrained check call."""

    specialty: str = Field(description="the medical specialty best placed to see this patient")
    urgency: Literal["routine", "urgent", "emergency"]


#: The one value the probe's schema allows: named nowhere in its prompt, so no model writes it unless a
#: grammar or response_format holds it to the schema.
PROBE_CODE = "QX-7-LANTERN"
_PROBE = OutputSchema(name="triage_code", json_schema={
    "type": "object", "additionalProperties": False, "required": ["code"],
    "properties": {"code": {"type": "string", "enum": [PROBE_CODE]}}})

_SYSTEM = "You are a concise clinical assistant."
_CASE = "A 58-year-old man has crushing chest pain for 40 minutes, sweating, and ST elevation in leads II, III, aVF."


@dataclass(frozen=True)
class CheckOptions:
    """``models check``'s options: output tokens per call (the structured call and the probe get at least 96
    and 32), the timeout, and the options of a model given by spec (never its response cache: a check must
    reach the model)."""

    max_tokens: int = 64
    timeout_s: float = 120.0
    model_options: ModelOptions | None = None


@dataclass(frozen=True)
class Enforcement:
    """What the backend declares (``ChatModel.enforces_schemas``), and the error of a probe no answer came to."""

    declared: bool
    refused: str | None = None
    #: The structured call's own error when the server refused it (no probe was sent then: its request would be
    #: refused alike); the check fails.
    structured_refused: str | None = None


async def _check(base: ChatModel, options: CheckOptions) -> tuple[CallRecorder, Enforcement]:
    recorder = CallRecorder()
    # A check reports an answer cut off at --max-tokens rather than asking again with more room;
    # an empty answer is still asked again and then fails the check.
    model = for_run(base, recorder, accept_truncated=True)
    settings = GenerationSettings(max_tokens=options.max_tokens, temperature=0.0, seed=0, timeout_s=options.timeout_s)
    try:
        await model.generate(ModelRequest(
            messages=(Message(role="system", content=_SYSTEM),
                      Message(role="user", content=f"{_CASE}\nIn one sentence, what is the most likely diagnosis?")),
            settings=settings, tag=CallTag(stage="check", role="plain")))
        # The same system message and case as the first call, so a server with a prefix cache serves
        # that shared prefix from it and reports the tokens as cached. A server that refuses the schema
        # (an HTTP 400 for response_format) is reported, not raised: the plain call's lines are still shown.
        structured = await _refused(model.generate(ModelRequest(
            messages=(Message(role="system", content=_SYSTEM),
                      Message(role="user", content=f"{_CASE}\nWhich specialty should see him, and how urgently? "
                                                   'Answer in JSON, as {"specialty": ..., "urgency": ...}.')),
            settings=settings.model_copy(update={"max_tokens": max(options.max_tokens, 96)}),
            schema=OutputSchema.from_model(CheckAnswer), tag=CallTag(stage="check", role="structured"))))
        refused = structured
        if structured is None:
            # The probe: one attempt, never repaired (a repair would show the model the schema's error).
            probe = for_run(base, recorder, max_repairs=0, accept_truncated=True)
            with contextlib.suppress(ModelOutputError):  # an invalid answer: recorded, with what is wrong with it
                refused = await _refused(probe.generate(ModelRequest(
                    messages=(Message(role="system", content=_SYSTEM),
                              Message(role="user", content=f"{_CASE}\nGive this case's triage code, in JSON as "
                                                           '{"code": ...}.')),
                    settings=settings.model_copy(update={"max_tokens": max(options.max_tokens, 32)}),
                    schema=_PROBE, tag=CallTag(stage="check", role="enforced"))))
    finally:
        await model.aclose()
    return recorder, Enforcement(declared=enforces_schemas(base), refused=refused, structured_refused=structured)


async def _refused(call: Awaitable[object]) -> str | None:
    """The error of a schema-constrained call the backend refused (e.g. a server answering HTTP 400 to
    ``response_format``: not recorded, so said here), None when it answered; an invalid answer
    (:class:`ModelOutputError`, recorded) and a user error (a refused key) are raised."""
    try:
        await call
    except ModelOutputError:
        raise
    except ModelError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class ModelCheck:
    """The calls made (``recorder``: each call's model, role, usage, latency, answer) and the schema probe's
    outcome; ``failed``: the server rejected the schema-constrained call."""

    recorder: CallRecorder
    enforcement: Enforcement

    @property
    def failed(self) -> bool:
        return self.enforcement.structured_refused is not None


async def acheck_model(model: str | ChatModel, options: CheckOptions | None = None, **changes: Any) -> ModelCheck:
    """Check ``model`` (a spec, ``SPEC@BASE_URL#KEY_VAR``, a model config file, or a :class:`ChatModel`):
    named as a judge is, so a judge's own server is checked with its own key before a cohort relies on it."""
    chosen = options_of(CheckOptions, options, changes)
    if isinstance(model, str):
        from consilium.models.factory import build_ref
        from consilium.models.refs import parse_model_ref

        shared = dataclasses.replace(chosen.model_options or ModelOptions.from_env(), cache=False)
        model = build_ref(parse_model_ref(model, flag="model"), shared)
    recorder, enforcement = await _check(model, chosen)
    return ModelCheck(recorder=recorder, enforcement=enforcement)


check_model = sync_twin(acheck_model)


def enforcement_line(recorder: CallRecorder, enforcement: Enforcement) -> str:
    """Whether the probe's answer kept the schema (it can only by enforcement), beside what the backend
    declares, and what a judge does with it (docs/judges.md, Decoding order)."""
    probe = next((c for c in reversed(recorder.calls) if c.role == "enforced"), None)
    said = "declares it enforces schemas" if enforcement.declared else "does not declare schema enforcement"
    if probe is not None and probe.parsed is not None:
        return f"schema enforced: yes (the probe's answer holds the one value its schema allows; the backend {said})"
    if enforcement.structured_refused is not None:
        line = (f"schema enforced: no (the server rejected the schema-constrained request: "
                f"{clip(enforcement.structured_refused, 160)}; the backend {said})")
    else:
        why = enforcement.refused or (probe.error if probe is not None else None) or "no answer"
        line = f"schema enforced: no (the probe: {clip(why, 160)}; the backend {said})"
    if enforcement.declared and enforcement.structured_refused is not None:
        line += ("; judges ask it constrained first, and it rejects every such call: run it with --schema-dialect "
                 "none (or json_object, if it takes that) so that they ask in the paper's order")
    elif enforcement.declared:
        line += ("; judges ask it constrained first and repair: with a server that ignores response_format, "
                 "run it with --schema-dialect none so that they ask in the paper's order")
    return line


def cache_note(spec: str, recorder: CallRecorder) -> str | None:
    """A served model that reported no cached prompt tokens for the second call, which repeats the
    first call's system message and case: say how vLLM is made to report them."""
    structured = [c for c in recorder.calls if c.role == "structured" and c.error is None]
    if not spec.startswith("openai:") or not structured or any(c.usage.cached_tokens for c in recorder.calls):
        return None
    return ("note: the server reported no cached prompt tokens, although the second call repeats the first "
            "call's opening; vLLM reports them (usage.prompt_tokens_details.cached_tokens) only when started "
            "with --enable-prompt-tokens-details (and serves them only with prefix caching on, its default)")
