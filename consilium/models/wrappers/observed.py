"""Model calls as LangChain chat-model runs, so LangSmith and any LangChain callback handler see them.

Our backends are not LangChain runnables, so a tracer that follows a LangGraph run sees its nodes but
not the calls made inside them. This wrapper (per run, just inside the recording) reports each call to
the callbacks of the LangChain run it is made in: the node's child config that LangGraph sets in
``var_child_runnable_config``, or, outside any graph, LangSmith's tracer when ``LANGSMITH_TRACING`` is
on. Each call becomes ``on_chat_model_start`` (the messages, the settings, its stage, role and round as
metadata) and then ``on_llm_end`` (the answer with its token usage) or ``on_llm_error``, so the LLM run
nests under its node's run (docs/observability.md). With no handler to tell, it only passes the call on.
What it tells them is masked (consilium/redact.py): the messages and the answer, as every file is.

The rest of what LangSmith's tracer sends (the graph's state, a node's inputs: the case, a person's answers)
does not pass through here, so LangSmith's shared client gets consilium's masking as its ``anonymizer``
(applied to every run's inputs, outputs, metadata and error before they leave the process) when a run's
model stack is built and before each call, while tracing is on (:func:`mask_langsmith`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackManager
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers.context import tracing_v2_callback_var
from langsmith.utils import tracing_is_enabled

from consilium.models.protocol import ChatModel
from consilium.models.types import Message, ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel
from consilium.models.wrappers.masked import mask_response
from consilium.redact import redact, redact_exception, redact_value

__all__ = ["ObservedModel", "call_metadata", "mask_langsmith", "masking", "model_provider", "provider_of",
           "to_langchain_messages", "to_llm_result"]

Anonymizer = Callable[[dict[str, Any]], dict[str, Any]]
#: Set on consilium's anonymizer, so that it is never wrapped twice.
_MASKS = "consilium_masks"


def masking(inner: Anonymizer | None) -> Anonymizer:
    """A LangSmith anonymizer that applies ``inner`` (one the user gave the client), then masks every string
    left (consilium/redact.py). A client of your own: ``Client(anonymizer=masking(None))``."""

    def anonymize(data: dict[str, Any]) -> dict[str, Any]:
        return dict(redact_value(inner(data) if inner is not None else data))

    setattr(anonymize, _MASKS, True)
    return anonymize


def mask_langsmith() -> None:
    """While LangSmith tracing is on, make consilium's masking the anonymizer of its shared client (the one
    LangChain's tracer uses), after the client's own; once."""
    if not tracing_is_enabled():
        return
    from langsmith import run_trees

    client = run_trees.get_cached_client(anonymizer=masking(None))
    current = getattr(client, "_anonymizer", None)
    if not getattr(current, _MASKS, False):  # a client made before this call: its anonymizer, then ours
        client._anonymizer = masking(current)


def provider_of(endpoint: str) -> str:
    """The provider a model's ``endpoint`` names, as LangSmith's ``ls_provider`` and OpenTelemetry's
    ``gen_ai.provider.name`` want it (an OpenAI-compatible server is ``openai``, as for LangChain's
    ChatOpenAI with a ``base_url``); never the endpoint itself, which may hold a URL's credentials."""
    if endpoint.startswith("pool("):
        endpoint = endpoint.removeprefix("pool(")
    for prefix, provider in (("llama.cpp", "llama.cpp"), ("vllm:", "vllm"), ("scripted", "scripted"),
                             ("replay", "replay"), ("http://", "openai"), ("https://", "openai")):
        if endpoint.startswith(prefix):
            return provider
    return "consilium"


def model_provider(model: ChatModel) -> str:
    """The provider of a model: for a LangChain chat model (``langchain:`` or an object), the one LangChain
    itself reports for it (its ``ls_provider``: ``openai`` for ChatOpenAI, ``anthropic`` for
    ChatAnthropic, …, else its ``_llm_type``), found through the wrappers; else :func:`provider_of` its
    endpoint."""
    # A LangChain chat model's class is loaded where one exists: looked up, never imported (about 0.04 s of
    # start-up that a model of ours does not need).
    chat_models = sys.modules.get("langchain_core.language_models.chat_models")
    found: Any = model
    for _ in range(32):  # the wrappers' chain is short; a cycle is not followed for ever
        chat = getattr(found, "chat", None)
        if chat_models is not None and isinstance(chat, chat_models.BaseChatModel):
            try:
                provider = chat._get_ls_params().get("ls_provider") or chat._llm_type
            except Exception:  # a model's own code: it may not answer, and the call must go on
                provider = None
            return str(provider) if provider else "langchain"
        found = getattr(found, "inner", None)
        if found is None:
            break
    return provider_of(model.endpoint)


def call_metadata(request: ModelRequest, model_id: str, endpoint: str, provider: str | None = None) -> dict[str, Any]:
    """What a call's run says about it besides its messages: its place in the run and its model (its
    provider: ``provider``, else the endpoint's)."""
    tag, settings = request.tag, request.settings
    metadata: dict[str, Any] = {
        "stage": tag.stage, "role": tag.role, "round": tag.round,
        "ls_provider": provider or provider_of(endpoint), "ls_model_name": model_id, "ls_model_type": "chat",
        "ls_temperature": settings.temperature, "ls_max_tokens": settings.max_tokens,
    }
    if request.output_schema is not None:
        metadata["schema"] = request.output_schema.name
    return metadata


def _message(message: Message) -> BaseMessage:
    content = message.content
    if message.images:  # the trace shows which images were sent, not their bytes
        captions = message.captions or ("",) * len(message.images)
        content += "".join(f"\n[image {path}{': ' + caption if caption else ''}]"
                           for path, caption in zip(message.images, captions, strict=True))
    kinds: dict[str, type[BaseMessage]] = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return kinds[message.role](content=redact(content))


def to_langchain_messages(messages: tuple[Message, ...] | list[Message]) -> list[BaseMessage]:
    return [_message(m) for m in messages]


def to_llm_result(response: ModelResponse) -> LLMResult:
    """The answer as LangChain reports a chat model's: the message with its ``usage_metadata`` (what
    LangSmith counts) and the OpenAI-style ``token_usage`` in ``llm_output``; secrets masked."""
    response = mask_response(response)
    usage = response.usage
    usage_metadata: dict[str, Any] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                                      "total_tokens": usage.total_tokens}
    if usage.cached_tokens:
        usage_metadata["input_token_details"] = {"cache_read": usage.cached_tokens}
    if usage.reasoning_tokens:
        usage_metadata["output_token_details"] = {"reasoning": usage.reasoning_tokens}
    info = {"finish_reason": response.finish_reason, "model_name": response.model}
    extra = {"reasoning_content": response.reasoning} if response.reasoning else {}
    message = AIMessage(content=response.text, usage_metadata=usage_metadata,  # type: ignore[arg-type]
                        response_metadata=info, additional_kwargs=extra)
    token_usage = {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
                   "total_tokens": usage.total_tokens, "estimated": usage.estimated}
    return LLMResult(generations=[[ChatGeneration(message=message, generation_info=info)]],
                     llm_output={"token_usage": token_usage, "model_name": response.model,
                                 "cached": response.cached, "latency_ms": response.latency_ms})


def _listened(config: RunnableConfig | None) -> bool:
    """Whether a call would reach a handler: the run's callbacks, or LangSmith's tracer (its environment
    variables, ``tracing_context`` or LangChain's ``tracing_v2_enabled``), which LangChain adds itself."""
    callbacks = config.get("callbacks") if config else None
    if isinstance(callbacks, BaseCallbackManager):  # inside a LangChain run, which added the tracer if it is on
        return bool(callbacks.handlers)
    if callbacks:
        return True
    return tracing_v2_callback_var.get() is not None or bool(tracing_is_enabled())


class ObservedModel(WrapperModel):
    """Tells the current LangChain run's callbacks of every call made through it."""

    def __init__(self, inner: ChatModel) -> None:
        super().__init__(inner)
        self.provider = model_provider(inner)
        mask_langsmith()  # before the run's graph sends its first run

    async def generate(self, request: ModelRequest) -> ModelResponse:
        config = var_child_runnable_config.get()
        if not _listened(config):
            return await self.inner.generate(request)  # nobody listens: the call costs nothing more
        config = config or {}
        mask_langsmith()
        manager = AsyncCallbackManager.configure(
            inheritable_callbacks=config.get("callbacks"), inheritable_tags=config.get("tags"),
            inheritable_metadata=config.get("metadata"),
            local_metadata=call_metadata(request, self.model_id, self.endpoint, self.provider))
        params = {"model": self.model_id, **request.settings.model_dump(exclude={"timeout_s"})}
        schema = request.output_schema
        (run,) = await manager.on_chat_model_start(
            {"name": self.model_id, "id": ["consilium", "models", self.provider]},
            [to_langchain_messages(request.messages)], name=self.model_id, invocation_params=params,
            options={"schema": schema.name if schema is not None else None}, batch_size=1)
        try:
            response = await self.inner.generate(request)
        except BaseException as exc:
            await run.on_llm_error(redact_exception(exc))  # LangSmith shows its text and traceback: masked
            raise
        await run.on_llm_end(to_llm_result(response))
        return response
