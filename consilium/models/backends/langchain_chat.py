"""``langchain:MODULE:FACTORY``: any LangChain chat model (a ``BaseChatModel``) as a consilium model.

The spec names a function in an importable module that returns the chat model (or the chat model itself);
the Python API takes the object. Either way it sits behind the one protocol, under the same shared and
per-run layers as every backend (docs/models.md, "langchain:MODULE:FACTORY"); langchain_wire.py reads
its messages, answers and errors.

* The request's settings replace the chat model's own, on a copy, where the model has a field for them
  (``temperature``, ``top_p``, ``seed``, and ``max_tokens`` or its provider's name for it); a setting it
  has no field for, or that an OpenAI reasoning model refuses, is left out and said so on the response.
* Structured output goes through the model's own ``with_structured_output`` (its default method, or the
  one asked for); its raw message is the answer, which our schema validates as usual. A model without
  structured output (no ``bind_tools``) gets the schema in the prompt only, as every prompt spells it out.
* Usage is the message's ``usage_metadata``; a count it leaves out is estimated with tiktoken.
* A failure is classified by its HTTP status and kind (timeout, connection), so retries work as for
  ``openai:``; any other failure of the model is a :class:`ModelError`, recorded like any failed stage.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langsmith.run_helpers import tracing_context
from pydantic import SecretBytes, SecretStr

from consilium.errors import ConsiliumError, ModelError, UserError
from consilium.models.backends.key_check import check_key
from consilium.models.backends.langchain_wire import model_error, one_line, read_answer, to_langchain
from consilium.models.protocol import NO_STAGE_LIMITS
from consilium.models.reasoning import is_openai_reasoning_model
from consilium.models.types import GenerationSettings, ModelRequest, ModelResponse
from consilium.redact import (
    is_secret_name,
    redact_url,
    redact_value,
    register_secret,
    register_url_credentials,
    without_secrets,
)

__all__ = ["LangChainChatModel", "chat_model_identity", "load_chat_model"]

T = TypeVar("T")
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()

#: Each request setting, and the chat-model fields that may carry it (the first one a model has is set).
SETTING_FIELDS: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "top_p": ("top_p",),
    "seed": ("seed",),
    "max_tokens": ("max_tokens", "max_completion_tokens", "max_output_tokens", "num_predict"),
}
#: Fields that say where a model is served (not in every integration's identifying params).
_WHERE_FIELDS = ("openai_api_base", "base_url", "anthropic_api_url", "api_base", "azure_endpoint", "endpoint_url")
#: A secret field that is an API key (``openai_api_key``, ``api_key``), checked as the ``openai:`` backend's is.
_API_KEY = re.compile(r"api_key", re.IGNORECASE)


def load_chat_model(target: str) -> LangChainChatModel:
    """The backend for ``langchain:MODULE:FACTORY``: ``MODULE:FACTORY`` names a function (called with no
    arguments) that returns a ``BaseChatModel`` (or a :class:`LangChainChatModel`, to choose the
    structured-output method), or one itself; :class:`UserError` naming the spec for anything else."""
    spec = f"langchain:{target}"
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise UserError(f"model spec {spec!r}: expected langchain:MODULE:FACTORY (a module to import and a "
                        "function in it that returns a LangChain chat model)")
    if os.getcwd() not in sys.path:  # a module in the working directory, as `python -m` finds it
        sys.path.append(os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:  # the module's own import may fail in any way: name it, no traceback
        raise UserError(f"model spec {spec!r}: cannot import module {module_name!r} ({one_line(exc)})") from None
    for part in attr.split("."):
        if not hasattr(found, part):
            raise UserError(f"model spec {spec!r}: module {module_name!r} has no attribute {attr!r}")
        found = getattr(found, part)
    if not isinstance(found, BaseChatModel | LangChainChatModel) and not callable(found):
        raise UserError(f"model spec {spec!r}: {target} (of type {type(found).__name__}) is not a LangChain chat "
                        "model or a function returning one")
    made = found
    if not isinstance(found, BaseChatModel | LangChainChatModel):
        try:
            made = found()
        except ConsiliumError:
            raise
        except Exception as exc:  # the factory's own failure (a missing key, a bad argument)
            raise UserError(f"model spec {spec!r}: {attr}() failed ({one_line(exc)})") from None
    if isinstance(made, LangChainChatModel):
        return LangChainChatModel(made.chat, model_id=spec, method=made.method)
    if not isinstance(made, BaseChatModel):
        raise UserError(f"model spec {spec!r}: {attr}() returned a value of type {type(made).__name__}, not a "
                        "LangChain BaseChatModel")
    return LangChainChatModel(made, model_id=spec)


def _background_loop() -> asyncio.AbstractEventLoop:
    """The one event loop every LangChain call of the process runs on, on a daemon thread of its own.
    Integrations keep their async HTTP clients process-wide (langchain-openai caches them by URL), and a
    client is bound to the loop it first ran on, while each command and each API call runs a loop of its own."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="consilium-langchain", daemon=True).start()
        return _loop


async def _on_background_loop(start: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``start()`` awaited on the background loop, in a context of its own with LangSmith tracing off;
    cancelling the caller cancels it there. Every call is reported to LangChain's callbacks once, by the
    observation layer (models/wrappers/observed.py) with its stage, role and round: a graph node's callbacks
    reaching the chat model too would report each call twice (and count its tokens twice in LangSmith)."""
    loop, context = _background_loop(), contextvars.Context()

    async def quiet() -> T:
        with tracing_context(enabled=False):
            return await start()

    async def run() -> T:
        return await loop.create_task(quiet(), context=context)

    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), loop))


def _register_secrets(value: Any, name: str = "") -> None:
    """Register for masking (consilium/redact.py) every secret a chat model holds: each ``SecretStr`` and
    each string under a secret-looking name (``api_key``, ``token``, ``Authorization`` …), at any depth
    of its fields, so its own key is masked in every trace, log and terminal line as ``--api-key`` is; a
    header's value (``Bearer TOKEN``) is registered whole and word by word (register_secret), so a server
    that echoes the token alone is masked too; a URL's ``user:password@`` in any field as the Basic header it
    is sent as."""
    if isinstance(value, SecretStr):
        register_secret(value.get_secret_value())
        if _API_KEY.search(name):  # sent in a header: a pasted newline would fail every call
            check_key(value.get_secret_value())
    elif isinstance(value, SecretBytes):
        register_secret(value.get_secret_value().decode(errors="replace"))
    elif isinstance(value, str):
        if name and is_secret_name(name):
            register_secret(value)
        register_url_credentials(value)  # a base URL's user:password@, in the forms it is sent in
    elif isinstance(value, dict):
        for key, inner in value.items():
            _register_secrets(inner, str(key))
    elif isinstance(value, list | tuple):
        for inner in value:
            _register_secrets(inner, name)


def chat_model_identity(chat: BaseChatModel) -> str | None:
    """The chat model's class, identifying params and where it is served, as stable JSON without secrets;
    None when they are not JSON data (then its answers are not cached: the identity would not hold)."""
    params: dict[str, Any] = dict(chat._identifying_params)
    fields = type(chat).model_fields
    for name in _WHERE_FIELDS:
        value = getattr(chat, name, None) if name in fields else None
        if isinstance(value, str) and value:
            params.setdefault(name, redact_url(value))
    cls = type(chat)
    try:
        return json.dumps({"class": f"{cls.__module__}.{cls.__qualname__}",
                           "params": redact_value(without_secrets(params))},
                          sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def _model_name(chat: BaseChatModel) -> str | None:
    params = chat._identifying_params
    for value in (getattr(chat, "model_name", None), getattr(chat, "model", None),
                  params.get("model_name"), params.get("model")):
        if isinstance(value, str) and value:
            return value
    return None


class LangChainChatModel:
    """A LangChain ``BaseChatModel`` behind consilium's model protocol.

    ``method`` is passed to ``with_structured_output`` (``function_calling``, ``json_schema``, ``json_mode``,
    …); None keeps the model's own default, ``"none"`` sends the schema in the prompt only.
    """

    supports_images = True
    stage_max_tokens = NO_STAGE_LIMITS

    def __init__(self, chat: BaseChatModel, *, model_id: str | None = None, method: str | None = None) -> None:
        if not isinstance(chat, BaseChatModel):
            raise UserError(f"a {type(chat).__name__} is not a LangChain BaseChatModel")
        cls = type(chat)
        for field in cls.model_fields:
            _register_secrets(getattr(chat, field, None), field)
        name = _model_name(chat)
        self.chat = chat
        self.model_id = model_id or f"langchain:{cls.__name__}" + (f"({name})" if name else "")
        structured = not (cls.with_structured_output is BaseChatModel.with_structured_output
                          and cls.bind_tools is BaseChatModel.bind_tools)
        self.method = method if structured else "none"
        self.enforces_schemas = self.method != "none"  # the chat model's own structured output
        identity = chat_model_identity(chat)
        #: False when the identity is not stable JSON: the factory then leaves the response cache out.
        self.cacheable = identity is not None
        self.endpoint = f"langchain {identity or cls.__qualname__ + ' (no stable identity)'} " \
                        f"(structured output {self.method or 'default'})"
        refused = is_openai_reasoning_model(name or "")
        self._fields = {setting: next((f for f in names if f in cls.model_fields), None)
                        for setting, names in SETTING_FIELDS.items()}
        if refused:  # as the openai: backend: no sampling settings for an o-series or gpt-5 model
            self._fields.update(temperature=None, top_p=None, seed=None)

    def _configured(self, settings: GenerationSettings) -> tuple[BaseChatModel, tuple[str, ...]]:
        """A copy of the chat model with the request's settings, and the settings it could not take."""
        update: dict[str, Any] = {}
        omitted: list[str] = []
        for setting, field in self._fields.items():
            value = getattr(settings, setting)
            if value is None:
                continue
            if field is None:
                omitted.append(setting)
            else:
                update[field] = value
        return (self.chat.model_copy(update=update) if update else self.chat), tuple(omitted)

    def _runnable(self, chat: BaseChatModel, request: ModelRequest) -> Any:
        """The structured runnable (raw message included) for a schema request, else None."""
        schema, json_schema = request.output_schema, request.json_schema
        if schema is None or json_schema is None or self.method == "none":
            return None
        tool = {**json_schema, "title": re.sub(r"[^A-Za-z0-9_-]", "_", schema.name)[:64]}
        kwargs: dict[str, Any] = {"include_raw": True}
        if self.method is not None:
            kwargs["method"] = self.method
        try:
            return chat.with_structured_output(tool, **kwargs)
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise UserError(f"{self.model_id}: structured output (method {self.method or 'default'}) "
                            f"refused: {one_line(exc)}") from None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        chat, omitted = self._configured(request.settings)
        runnable = self._runnable(chat, request)
        messages = [to_langchain(m) for m in request.messages]
        started = time.perf_counter()
        try:
            call = (chat if runnable is None else runnable).ainvoke
            out = await asyncio.wait_for(_on_background_loop(lambda: call(messages)), request.settings.timeout_s)
        except ConsiliumError:
            raise
        except Exception as exc:  # a provider's SDK raises its own kinds: classify them for the retry layer
            raise model_error(self.model_id, exc) from exc
        latency_ms = (time.perf_counter() - started) * 1000
        raw = out.get("raw") if runnable is not None and isinstance(out, dict) else out
        if not isinstance(raw, AIMessage):
            raise ModelError(f"{self.model_id}: the model answered with a {type(raw).__name__}, not an AIMessage")
        return read_answer(raw, request, structured=runnable is not None, model_id=self.model_id,
                           latency_ms=latency_ms, omitted=omitted)

    async def aclose(self) -> None:
        """Nothing to close: the chat model is its owner's (its clients close with it)."""
