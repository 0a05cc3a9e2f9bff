"""LangChain chat models for tests/models/test_langchain_models.py, built on langchain-core's fake chat models.

The factories are what a spec names: ``--model langchain:support.langchain_fakes:panel`` (tests/ is on sys.path).
Each plays one structured consilium on a case that reaches consensus in round 1: the role assignment,
three opinions, the synthesis and three accepting votes (8 calls; the three calls of a stage get the same
answer, so the order parallel calls arrive in does not matter).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field

from consilium.models.backends.langchain_chat import LangChainChatModel

#: The answer to each schema of a structured consilium, by schema name.
ANSWERS: dict[str, dict[str, Any]] = {
    "RoleAssignment": {
        "primary": {"label": "Cardiologist", "justification": "troponin rise with normal coronaries"},
        "supporting": [{"label": "Cardiac radiologist", "justification": "cardiac MRI confirms it"},
                       {"label": "Infectious disease specialist", "justification": "viral prodrome"}],
    },
    "StructuredOpinion": {"clinical_data": "troponin 410 then 690 ng/L", "syndromes": "myocardial injury",
                          "differential_diagnosis": "1. myocarditis 2. pericarditis",
                          "diagnostic_strategy": "cardiac MRI", "management_strategy": "telemetry",
                          "final_conclusion": "acute viral myocarditis"},
    "StructuredReport": {"final_opinion": "Acute viral myocarditis.", "summary": "troponin rise after a virus",
                         "final_differential": "1. pericarditis", "diagnostic_plan": "cardiac MRI",
                         "management_plan": "telemetry", "safety_warnings": "arrhythmia"},
    "VoteAnswer": {"vote": "accept", "reason": "I can sign this report.", "requested_change": None},
}
#: The order a structured consilium asks for them in.
ORDER = ["RoleAssignment", *["StructuredOpinion"] * 3, "StructuredReport", *["VoteAnswer"] * 3]
#: What each message of :func:`panel` reports.
USAGE = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150,
         "input_token_details": {"cache_read": 64}, "output_token_details": {"reasoning": 4}}


class CountingHandler(BaseCallbackHandler):
    """Counts the chat-model calls LangChain makes (its own callbacks: nothing of ours is patched)."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]],
                            **kwargs: Any) -> None:
        self.calls += 1


def panel(handler: CountingHandler | None = None) -> FakeMessagesListChatModel:
    """Answers as messages with ``usage_metadata`` and ``response_metadata`` (model name, finish reason)."""
    messages: Sequence[BaseMessage] = [
        AIMessage(content=json.dumps(ANSWERS[name]), usage_metadata=USAGE,  # type: ignore[arg-type]
                  response_metadata={"model_name": "fake-panel-1", "finish_reason": "stop"}) for name in ORDER]
    return FakeMessagesListChatModel(responses=list(messages), callbacks=[handler] if handler else None)


def plain_panel() -> FakeListChatModel:
    """Answers as bare strings: no usage reported, so every count is estimated."""
    return FakeListChatModel(responses=[json.dumps(ANSWERS[name]) for name in ORDER])


class ToolCallingFake(GenericFakeChatModel):
    """A fake with tool calling: ``bind_tools`` binds the tools (so langchain-core's own
    ``with_structured_output`` works on it), and each answer is a tool call whose arguments are the
    :data:`ANSWERS` entry for the bound tool's name. It has fields for temperature and max_tokens, and
    notes each call's bound tools, tool choice and settings in ``seen`` (shared by its copies)."""

    messages: Any = iter(())
    temperature: float | None = None
    max_tokens: int | None = None
    seen: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | Any], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        tools = kwargs.get("tools") or []
        self.seen.append({"tools": [t.get("title") for t in tools], "tool_choice": kwargs.get("tool_choice"),
                          "temperature": self.temperature, "max_tokens": self.max_tokens})
        if not tools:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="free text"))])
        name = tools[0]["title"]
        call = {"name": name, "args": ANSWERS[name], "id": f"call-{len(self.seen)}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


def tool_panel() -> ToolCallingFake:
    return ToolCallingFake(seen=[])


class ProviderError(Exception):
    """What a provider's SDK raises for an HTTP error: its status on ``status_code``."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class Failing(BaseChatModel):
    """Raises ``errors`` in turn (one per call), then answers in plain text; counts its calls."""

    errors: list[Exception] = Field(default_factory=list)
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "failing-fake"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        if self.calls <= len(self.errors):
            raise self.errors[self.calls - 1]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="A plain answer."))])


def broken() -> Failing:
    """A model whose every call fails in the provider's own way (not an HTTP error: not retried)."""
    return Failing(errors=[ValueError("the provider refused the request: quota exhausted")] * 50)


def returns_text() -> str:
    return "not a model"


NOT_A_MODEL = 42


def local_openai() -> LangChainChatModel:
    """``ChatOpenAI`` against the llama.cpp server whose URL the test puts in ``CONSILIUM_TEST_LLAMA_URL``,
    structured output by tool calling (llama-cpp-python's server constrains a named tool's arguments)."""
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(base_url=os.environ["CONSILIUM_TEST_LLAMA_URL"], api_key="sk-local",  # type: ignore[arg-type]
                      model="smollm2-local", max_retries=0)
    return LangChainChatModel(chat, method="function_calling")
