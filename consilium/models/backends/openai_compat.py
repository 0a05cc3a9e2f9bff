"""``openai:MODEL``: any OpenAI-compatible chat server (OpenAI, ``vllm serve``, llama.cpp's server).

Structured output is a per-endpoint *dialect*, because servers disagree:

* ``json_schema`` — ``{"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM);
* ``json_object`` — ``{"type": "json_object", "schema": {...}}`` (llama-cpp-python's server);
* ``none`` — the schema is only described in the prompt; validation still applies.

Retries are the retry wrapper's (STYLE.md 12), so this backend only
classifies failures as transient or not. The request travels by one of two
transports (``--http-client``; see http_transports.py): aiohttp by default,
or the official openai SDK.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from consilium.errors import ModelError, TransientModelError, UserError
from consilium.models.backends.http_transports import open_transport
from consilium.models.images import image_data_url
from consilium.models.tokens import count_message_tokens, count_tokens
from consilium.models.types import Message, ModelRequest, ModelResponse
from consilium.models.usage import Usage

__all__ = ["OpenAICompatModel", "SchemaDialect", "parse_retry_after"]

SchemaDialect = Literal["json_schema", "json_object", "none"]
DIALECTS: tuple[str, ...] = ("json_schema", "json_object", "none")


def _wire_message(message: Message) -> dict[str, Any]:
    if not message.images:
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    for path in message.images:
        parts.append({"type": "image_url", "image_url": {"url": image_data_url(path)}})
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
        return str(message)[:500]
    except ValueError:
        return raw.decode("utf-8", "replace")[:500] or "(empty body)"


class OpenAICompatModel:
    #: Messages with images are sent as OpenAI content parts (text + image_url data URLs);
    #: a server without vision support answers with an error naming the model.
    supports_images = True

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 dialect: str = "json_schema", timeout_s: float = 120.0, http_client: str = "aiohttp") -> None:
        if dialect not in DIALECTS:
            raise UserError(f"unknown schema dialect {dialect!r} (expected one of {', '.join(DIALECTS)})")
        if not model:
            raise UserError("openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
        if not api_key:
            if base_url is None:
                raise UserError("openai:MODEL needs OPENAI_API_KEY (or --base-url for a local server)")
            api_key = "not-needed"  # local servers accept any key
        self.model_id = model
        self.dialect = dialect
        self.endpoint = base_url or "https://api.openai.com/v1"
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
            "max_tokens": settings.max_tokens,
        }
        if settings.seed is not None:
            body["seed"] = settings.seed
        response_format = self._response_format(request)
        if response_format is not None:
            body["response_format"] = response_format
        started = time.perf_counter()
        try:
            status, headers, raw = await self._transport.post("/chat/completions", body, settings.timeout_s)
        except TimeoutError as exc:
            raise TransientModelError(f"{self.endpoint}: request timed out") from exc
        except ConnectionError as exc:
            raise TransientModelError(f"{self.endpoint}: connection failed ({exc})") from exc
        if status != 200:
            self._raise_for_status(status, headers, raw)
        latency_ms = (time.perf_counter() - started) * 1000
        try:
            completion = json.loads(raw)
            choice = completion["choices"][0]
            text = choice["message"].get("content") or ""
            if not isinstance(text, str):
                raise TypeError("message content is not text")
            usage = self._usage(completion.get("usage"), request, text)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            # Not the JSON a chat completion should be (a broken proxy, a crashed replica).
            raise TransientModelError(f"{self.endpoint}: malformed response ({type(exc).__name__})") from exc
        return ModelResponse(
            text=text,
            usage=usage,
            latency_ms=latency_ms,
            model=completion.get("model") or self.model_id,
            finish_reason=choice.get("finish_reason"),
        )

    def _raise_for_status(self, status: int, headers: Any, raw: bytes) -> None:
        if status == 429 or status == 408 or status >= 500:
            raise TransientModelError(f"{self.endpoint}: HTTP {status}",
                                      retry_after=parse_retry_after(headers.get("retry-after")), status=status)
        if status in (401, 403):
            raise UserError(f"{self.endpoint}: HTTP {status}, the API key was refused (OPENAI_API_KEY)")
        if status == 404:
            raise UserError(f"{self.endpoint}: HTTP 404, unknown model {self.model_id!r} or wrong base URL")
        raise ModelError(f"{self.endpoint}: HTTP {status}: {_error_message(raw)}")

    @staticmethod
    def _usage(reported: dict[str, Any] | None, request: ModelRequest, text: str) -> Usage:
        if not reported:
            return Usage(input_tokens=count_message_tokens(list(request.messages)),
                         output_tokens=count_tokens(text), calls=1, estimated=True)
        cached = (reported.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        return Usage(input_tokens=int(reported.get("prompt_tokens") or 0),
                     output_tokens=int(reported.get("completion_tokens") or 0), cached_tokens=int(cached), calls=1)

    async def aclose(self) -> None:
        await self._transport.aclose()
