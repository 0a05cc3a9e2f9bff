"""``openai:MODEL``: any OpenAI-compatible chat server (OpenAI, ``vllm serve``, llama.cpp's server).

Structured output is a per-endpoint *dialect*, because servers disagree:

* ``json_schema`` — ``{"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM);
* ``json_object`` — ``{"type": "json_object", "schema": {...}}`` (llama-cpp-python's server);
* ``none`` — the schema is only described in the prompt; validation still applies.

The SDK's own retries are off: the retry wrapper owns retrying (STYLE.md 12),
so this backend only classifies failures as transient or not.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from consilium.errors import ModelError, TransientModelError, UserError
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


class OpenAICompatModel:
    #: Messages with images are sent as OpenAI content parts (text + image_url data URLs);
    #: a server without vision support answers with an error naming the model.
    supports_images = True

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 dialect: str = "json_schema", timeout_s: float = 120.0) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise UserError("the openai backend needs the package openai: pip install openai") from exc
        if dialect not in DIALECTS:
            raise UserError(f"unknown schema dialect {dialect!r} (expected one of {', '.join(DIALECTS)})")
        if not model:
            raise UserError("openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
        if not api_key:
            if base_url is None:
                raise UserError("openai:MODEL needs OPENAI_API_KEY (or --base-url for a local server)")
            api_key = "not-needed"  # local servers accept any key
        self._openai = openai
        self.model_id = model
        self.dialect = dialect
        self.endpoint = base_url or "https://api.openai.com/v1"
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s)

    def _response_format(self, request: ModelRequest) -> dict[str, Any] | None:
        schema = request.output_schema
        if schema is None or request.json_schema is None or self.dialect == "none":
            return None
        if self.dialect == "json_object":
            return {"type": "json_object", "schema": request.json_schema}
        return {"type": "json_schema", "json_schema": {"name": schema.name, "schema": request.json_schema}}

    async def generate(self, request: ModelRequest) -> ModelResponse:
        openai = self._openai
        settings = request.settings
        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "messages": [_wire_message(m) for m in request.messages],
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "max_tokens": settings.max_tokens,
            "timeout": settings.timeout_s,
        }
        if settings.seed is not None:
            kwargs["seed"] = settings.seed
        response_format = self._response_format(request)
        if response_format is not None:
            kwargs["response_format"] = response_format
        started = time.perf_counter()
        try:
            completion = await self._client.chat.completions.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise TransientModelError(f"{self.endpoint}: request timed out") from exc
        except openai.APIConnectionError as exc:
            raise TransientModelError(f"{self.endpoint}: connection failed ({exc})") from exc
        except (openai.APIResponseValidationError, ValueError) as exc:
            # A body that is not the JSON a chat completion should be (a broken proxy, a crashed replica).
            raise TransientModelError(f"{self.endpoint}: malformed response ({type(exc).__name__})") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status == 429 or status == 408 or status >= 500:
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
                raise TransientModelError(f"{self.endpoint}: HTTP {status}", retry_after=retry_after,
                                          status=status) from exc
            if status in (401, 403):
                raise UserError(f"{self.endpoint}: HTTP {status}, the API key was refused (OPENAI_API_KEY)") from exc
            if status == 404:
                raise UserError(
                    f"{self.endpoint}: HTTP 404, unknown model {self.model_id!r} or wrong base URL"
                ) from exc
            raise ModelError(f"{self.endpoint}: HTTP {status}: {exc.message}") from exc
        latency_ms = (time.perf_counter() - started) * 1000
        if not completion.choices:
            raise TransientModelError(f"{self.endpoint}: the response held no choices")
        choice = completion.choices[0]
        text = choice.message.content or ""
        return ModelResponse(
            text=text,
            usage=self._usage(completion, request, text),
            latency_ms=latency_ms,
            model=completion.model or self.model_id,
            finish_reason=choice.finish_reason,
        )

    @staticmethod
    def _usage(completion: Any, request: ModelRequest, text: str) -> Usage:
        reported = completion.usage
        if reported is None:
            return Usage(input_tokens=count_message_tokens(list(request.messages)),
                         output_tokens=count_tokens(text), calls=1, estimated=True)
        details = getattr(reported, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) or 0
        return Usage(input_tokens=reported.prompt_tokens or 0, output_tokens=reported.completion_tokens or 0,
                     cached_tokens=cached, calls=1)

    async def aclose(self) -> None:
        await self._client.close()
