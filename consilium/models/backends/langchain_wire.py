"""LangChain's messages and errors, read for consilium (the ``langchain:`` backend, langchain_chat.py).

Our messages go out as LangChain's; the answer comes back as an ``AIMessage``, read here into a
:class:`ModelResponse`: its text (a tool call's arguments for a schema request), reasoning, finish reason
(each provider's own name for a cut-off or filtered answer mapped to ours) and usage (``usage_metadata``,
estimated where it says nothing). A provider SDK's exception is classified by HTTP status and kind.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from consilium.errors import ConsiliumError, ModelError, TransientModelError, UserError
from consilium.models.images import image_data_url
from consilium.models.reasoning import split_reasoning
from consilium.models.tokens import reported_usage
from consilium.models.types import Message, ModelRequest, ModelResponse
from consilium.models.usage import Usage
from consilium.redact import clip

__all__ = ["model_error", "one_line", "read_answer", "to_langchain"]

_TIMEOUTS = {"APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout", "DeadlineExceeded"}
_CONNECTION = {"APIConnectionError", "ConnectError", "TransportError", "RemoteProtocolError", "NetworkError",
               "ClientConnectionError", "ServerDisconnectedError", "ServiceUnavailable"}
_LENGTH, _FILTERED = {"length", "max_tokens"}, {"content_filter", "safety", "refusal"}


def one_line(exc: BaseException) -> str:
    """The exception on one line, masked, at most 500 characters (masked before it is cut, consilium/redact.py)."""
    return clip(f"{type(exc).__name__}: {' '.join(str(exc).split())}", 500)


def to_langchain(message: Message) -> BaseMessage:
    """Our message as LangChain's: text, then each image (an OpenAI-style data URL block, which LangChain's
    integrations translate) followed by its caption."""
    content: str | list[str | dict[str, Any]] = message.content
    if message.images:
        parts: list[str | dict[str, Any]] = [{"type": "text", "text": message.content}]
        for n, path in enumerate(message.images):
            parts.append({"type": "image_url", "image_url": {"url": image_data_url(path)}})
            if message.captions:
                parts.append({"type": "text", "text": message.captions[n]})
        content = parts
    if message.role == "system":
        return SystemMessage(content=content)
    return HumanMessage(content=content) if message.role == "user" else AIMessage(content=content)


def _status(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        for name in ("status_code", "status", "code"):
            value = getattr(holder, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
                return value
    return None


def _retry_after(exc: BaseException) -> float | None:
    get = getattr(getattr(getattr(exc, "response", None), "headers", None), "get", None)
    value = get("retry-after") if callable(get) else None
    try:
        return max(0.0, float(value)) if value else None
    except (TypeError, ValueError):
        return None


def _reasoning(message: AIMessage) -> str | None:
    try:
        blocks = message.content_blocks
    except Exception:  # a provider's content LangChain cannot translate: its text is still read below
        blocks = []
    parts = [str(b.get("reasoning")) for b in blocks if b.get("type") == "reasoning" and b.get("reasoning")]
    extra = message.additional_kwargs.get("reasoning_content")
    if not parts and isinstance(extra, str) and extra:
        parts = [extra]
    return "\n\n".join(parts) or None


def _structured_text(message: AIMessage) -> str:
    """The answer to a schema request: the first tool call's arguments (as JSON), else the text."""
    if message.tool_calls:
        return json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)
    if message.invalid_tool_calls:
        return str(message.invalid_tool_calls[0].get("args") or "")
    return message.text


def _finish_reason(message: AIMessage) -> str | None:
    meta = message.response_metadata
    reason = meta.get("finish_reason") or meta.get("stop_reason") or meta.get("done_reason")
    if not isinstance(reason, str) or not reason:
        return None
    lowered = reason.lower()
    return "length" if lowered in _LENGTH else "content_filter" if lowered in _FILTERED else reason


def _usage(message: AIMessage, request: ModelRequest, answer: str, reasoning: str | None) -> Usage:
    """``usage_metadata``'s counts (cached input: ``input_token_details.cache_read``, reasoning:
    ``output_token_details.reasoning``); a count it leaves out is counted with tiktoken, marked estimated."""
    meta: dict[str, Any] = dict(message.usage_metadata or {})
    return reported_usage(list(request.messages), answer, reasoning, prompt=meta.get("input_tokens"),
                          output=meta.get("output_tokens"),
                          cached=int((meta.get("input_token_details") or {}).get("cache_read") or 0),
                          thinking=(meta.get("output_token_details") or {}).get("reasoning"))


def model_error(model_id: str, exc: Exception) -> ConsiliumError:
    """Our error for a chat model's failure: timeouts, connection failures, HTTP 408/429/5xx transient
    (retried); 401/403/404 the user's to fix; anything else a :class:`ModelError`, recorded as failed."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    status, detail = _status(exc), one_line(exc)  # masked: the server's text may echo a key
    if isinstance(exc, TimeoutError) or names & _TIMEOUTS:
        return TransientModelError(f"{model_id}: request timed out ({detail})")
    if status is not None and (status in (408, 429) or status >= 500):
        return TransientModelError(f"{model_id}: HTTP {status} ({detail})",
                                   retry_after=_retry_after(exc), status=status)
    if status in (401, 403):
        return UserError(f"{model_id}: HTTP {status}, the API key was refused ({detail})")
    if status == 404:
        return UserError(f"{model_id}: HTTP 404, unknown model or wrong base URL ({detail})")
    if isinstance(exc, ConnectionError) or names & _CONNECTION:
        return TransientModelError(f"{model_id}: connection failed ({detail})")
    return ModelError(f"{model_id}: {detail}")


def read_answer(raw: AIMessage, request: ModelRequest, *, structured: bool, model_id: str, latency_ms: float,
                omitted: tuple[str, ...]) -> ModelResponse:
    """The response for ``raw``; ``structured``: it answers a schema request through the model's mechanism."""
    thought, answer = split_reasoning(_structured_text(raw) if structured else raw.text)
    reasoning = "\n\n".join(p for p in (_reasoning(raw), thought) if p) or None
    model = raw.response_metadata.get("model_name") or raw.response_metadata.get("model")
    return ModelResponse(text=answer, usage=_usage(raw, request, answer, reasoning), latency_ms=latency_ms,
                         model=model if isinstance(model, str) and model else model_id,
                         finish_reason=_finish_reason(raw), reasoning=reasoning, omitted_settings=omitted)
