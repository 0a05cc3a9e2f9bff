"""``openai:MODEL``: any OpenAI-compatible chat server (OpenAI, ``vllm serve``, llama.cpp's server).

Structured output is a per-endpoint *dialect*, because servers disagree:

* ``json_schema`` — ``{"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM);
* ``json_object`` — ``{"type": "json_object", "schema": {...}}`` (llama-cpp-python's server);
* ``none`` — the schema is only described in the prompt; validation still applies.

Retries are the retry wrapper's (STYLE.md 12), so this backend only
classifies failures as transient or not. The request travels by one of two
transports (``--http-client``; see http_transports.py): aiohttp by default,
or the official openai SDK.

Reasoning models (models/reasoning.py): the output cap goes as ``max_tokens`` or
``max_completion_tokens``, and sampling settings the model refuses are left out,
both by the model name's rule unless ``token_param`` / ``omit_settings`` say
otherwise; what was left out is on each response, for the trace. Reasoning text
(``reasoning_content``, or a leading ``<think>`` block) is taken out of the answer
and returned as ``reasoning``.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from consilium.errors import ModelError, TransientModelError, UserError
from consilium.models.backends.http_transports import LOCAL_KEY, open_transport
from consilium.models.backends.key_check import check_key
from consilium.models.backends.openai_wire import Completion, MalformedCompletion, parse_completion
from consilium.models.images import image_data_url
from consilium.models.protocol import NO_STAGE_LIMITS
from consilium.models.reasoning import SAMPLING_SETTINGS, TOKEN_PARAMS, request_rule, split_reasoning
from consilium.models.tokens import reported_usage
from consilium.models.types import Message, ModelRequest, ModelResponse
from consilium.models.usage import Usage
from consilium.redact import clip, redact, redact_url

__all__ = ["OpenAICompatModel", "SchemaDialect", "parse_retry_after"]

SchemaDialect = Literal["json_schema", "json_object", "none"]
DIALECTS: tuple[str, ...] = ("json_schema", "json_object", "none")


def _wire_message(message: Message) -> dict[str, Any]:
    """The message as OpenAI content parts: its text, then each image followed by its caption, as
    OpenTumorBoard gives a slide: "an image followed by a one-line description of it"
    (opentumorboard.txt App. B.1, B.2; C.1: "its image followed by its caption")."""
    if not message.images:
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    for n, path in enumerate(message.images):
        parts.append({"type": "image_url", "image_url": {"url": image_data_url(path)}})
        if message.captions:
            parts.append({"type": "text", "text": message.captions[n]})
    return {"role": message.role, "content": parts}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form; HTTP dates are ignored)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _error_message(raw: bytes) -> str:
    """The server's own words from an error body (OpenAI's ``{"error": {"message": ...}}``), else its text."""
    try:
        body = json.loads(raw)
        error = body.get("error", body) if isinstance(body, dict) else body
        message = error.get("message") if isinstance(error, dict) else error
        text = str(message)
    except (ValueError, RecursionError):
        text = raw.decode("utf-8", "replace") or "(empty body)"
    # Lone surrogates (from JSON escapes) would break every file this message is written to. Masked
    # before it is cut: a key cut in two would no longer match.
    return clip(text.encode("utf-8", "replace").decode("utf-8"), 500)


class OpenAICompatModel:
    #: Messages with images are sent as OpenAI content parts (text + image_url data URLs);
    #: a server without vision support answers with an error naming the model.
    supports_images = True
    stage_max_tokens = NO_STAGE_LIMITS

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 dialect: str = "json_schema", timeout_s: float = 120.0, http_client: str = "aiohttp",
                 token_param: str | None = None, omit_settings: tuple[str, ...] | None = None) -> None:
        if dialect not in DIALECTS:
            raise UserError(f"unknown schema dialect {dialect!r} (expected one of {', '.join(DIALECTS)})")
        if token_param is not None and token_param not in TOKEN_PARAMS:
            raise UserError(f"unknown token parameter {token_param!r} (expected one of {', '.join(TOKEN_PARAMS)})")
        unknown = [s for s in omit_settings or () if s not in SAMPLING_SETTINGS]
        if unknown:
            raise UserError(f"omit_settings: {unknown[0]!r} is not a setting that can be left out "
                            f"(expected some of {', '.join(SAMPLING_SETTINGS)})")
        if not model:
            raise UserError("openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
        if not api_key:
            if base_url is None:
                raise UserError("openai:MODEL needs OPENAI_API_KEY (or --base-url for a local server)")
            api_key = LOCAL_KEY  # local servers accept any key
        check_key(api_key)
        self.model_id = model
        self.dialect = dialect
        # What the request asks for: whether the server honours response_format is the server's to say, and
        # `models check` tells (cli/models_cmd.py); a server that ignores it is run with dialect none.
        self.enforces_schemas = dialect != "none"
        # Shown in messages, logs and cache keys: never a URL's user:password@ (docs/reliability.md).
        self.url = redact_url(base_url or "https://api.openai.com/v1")
        self.token_param, self.omitted = request_rule(model, token_param, omit_settings)
        # The dialect shapes every schema request, so it is part of the cache identity; so is a request
        # shaped for a reasoning model (said only when it differs, so a plain model's entries stay valid).
        self.endpoint = f"{self.url} (schema dialect {dialect})"
        if self.token_param != "max_tokens" or self.omitted:
            self.endpoint += f" ({self.token_param}; without {', '.join(self.omitted) or 'nothing'})"
        self.http_client = http_client
        self._transport = open_transport(http_client, base_url, api_key, timeout_s)

    def _response_format(self, request: ModelRequest) -> dict[str, Any] | None:
        schema = request.output_schema
        if schema is None or request.json_schema is None or self.dialect == "none":
            return None
        if self.dialect == "json_object":
            return {"type": "json_object", "schema": request.json_schema}
        return {"type": "json_schema", "json_schema": {"name": schema.name, "schema": request.json_schema}}

    async def generate(self, request: ModelRequest) -> ModelResponse:
        settings = request.settings
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [_wire_message(m) for m in request.messages],
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            self.token_param: settings.max_tokens,
        }
        if settings.seed is not None:
            body["seed"] = settings.seed
        omitted = tuple(name for name in self.omitted if body.pop(name, None) is not None)
        response_format = self._response_format(request)
        if response_format is not None:
            body["response_format"] = response_format
        started = time.perf_counter()
        try:
            status, headers, raw = await self._transport.post("/chat/completions", body, settings.timeout_s)
        except TimeoutError as exc:
            raise TransientModelError(f"{self.url}: request timed out") from exc
        except ConnectionError as exc:
            raise TransientModelError(redact(f"{self.url}: connection failed ({exc})")) from exc
        if status != 200:
            self._raise_for_status(status, headers, raw)
        latency_ms = (time.perf_counter() - started) * 1000
        try:
            completion = parse_completion(raw)
        except MalformedCompletion as exc:
            # Not the chat completion it should be (a broken proxy, a crashed replica, a buggy server).
            raise TransientModelError(redact(f"{self.url}: malformed response ({exc})")) from None
        thought, answer = split_reasoning(completion.text)
        reasoning = "\n\n".join(part for part in (completion.reasoning, thought) if part) or None
        return ModelResponse(
            text=answer,
            usage=_usage(completion, request, answer, reasoning),
            latency_ms=latency_ms,
            model=completion.model or self.model_id,
            finish_reason=completion.finish_reason,
            reasoning=reasoning,
            omitted_settings=omitted,
        )

    def _raise_for_status(self, status: int, headers: Any, raw: bytes) -> None:
        if status == 429 or status == 408 or status >= 500:
            raise TransientModelError(f"{self.url}: HTTP {status}",
                                      retry_after=parse_retry_after(headers.get("retry-after")), status=status)
        if status in (401, 403):
            raise UserError(f"{self.url}: HTTP {status}, the API key was refused (OPENAI_API_KEY)")
        if status == 404:
            raise UserError(f"{self.url}: HTTP 404, unknown model {self.model_id!r} or wrong base URL")
        # The server's text may echo the request (its Authorization header, a key in the URL): masked here,
        # at the source, so the error is safe wherever it goes (traces, spans, LangSmith, Studio).
        raise ModelError(redact(f"{self.url}: HTTP {status}: {_error_message(raw)}"))

    async def aclose(self) -> None:
        await self._transport.aclose()


def _usage(completion: Completion, request: ModelRequest, answer: str, reasoning: str | None) -> Usage:
    """The server's counts; a count it leaves out is counted with tiktoken and marked estimated, never 0.
    Reasoning tokens are part of the output tokens: reported in ``completion_tokens_details``, else
    counted from the reasoning text when there is some (vLLM, a ``<think>`` block)."""
    return reported_usage(list(request.messages), answer, reasoning, prompt=completion.prompt_tokens,
                          output=completion.completion_tokens, cached=completion.cached_tokens,
                          thinking=completion.reasoning_tokens)
