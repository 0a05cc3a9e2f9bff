"""Observability: every model call as a LangSmith LLM run under its node's run, and OpenTelemetry spans for
the run, its nodes and its calls (docs/observability.md). Runs use the scripted panel; LangSmith's API is a
capture server on 127.0.0.1 that this test starts."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.langchain import wait_for_all_tracers
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.keyecho import SECRET, key_echo_server
from support.langsmith_capture import API_KEY, Capture, langsmith_capture

from consilium import api
from consilium.cli import main
from consilium.graphs.consilium.graph import consilium_graph
from consilium.graphs.registry import read_trace
from consilium.models import CallRecord
from consilium.traces.schema import TraceBase

ROOT = Path(__file__).resolve().parents[2]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
BOARD_CASE = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"


def _simulate(out: Path, *extra: str) -> TraceBase:
    assert main(["simulate", "--case", str(CASE), "--model", PANEL, "--format", "free-form", "--out", str(out),
                 *extra]) == 0
    (path,) = out.glob("*/*.trace.json")
    return read_trace(path)


def _key(stage: str, role: str | None, round_: int | None) -> tuple[str, str, int]:
    return stage, role or "", round_ if round_ is not None else -1


def _calls(trace: TraceBase) -> list[CallRecord]:
    return sorted(trace.calls, key=lambda c: (*_key(c.stage, c.role, c.round), c.index))


# --- LangSmith: a capture of its API (tests/support/langsmith_capture.py) ----------------------------------------

@pytest.fixture
def captured() -> Iterator[type[Capture]]:
    with langsmith_capture(multipart=False) as handler:
        yield handler


@pytest.mark.localhost
def test_every_model_call_is_an_llm_run_under_its_node(captured: type[Capture], tmp_path: Path) -> None:
    trace_ = _simulate(tmp_path / "runs")
    wait_for_all_tracers()
    runs = captured.runs
    llm = [r for r in runs.values() if r.get("run_type") == "llm"]
    calls = _calls(trace_)
    assert len(llm) == len(calls) == len(trace_.calls) > 0

    nodes = set(consilium_graph().nodes) - {"__start__"}
    graph_runs = [r for r in runs.values() if r.get("name") == "consilium" and not r.get("parent_run_id")]
    assert len(graph_runs) == 1
    root_meta = graph_runs[0]["extra"]["metadata"]
    assert (root_meta["protocol"], root_meta["case"], root_meta["format"]) == (
        "consilium", trace_.case_id, "free-form")

    def meta(run: dict[str, Any]) -> dict[str, Any]:
        return dict(run["extra"]["metadata"])

    llm.sort(key=lambda r: (*_key(meta(r)["stage"], meta(r)["role"], meta(r)["round"]),
                            r["extra"]["metadata"]["usage_metadata"]["input_tokens"]))
    for run, call in zip(llm, calls, strict=True):
        parent = runs[str(run["parent_run_id"])]
        assert parent["run_type"] == "chain" and parent["name"] in nodes
        assert parent["extra"]["metadata"]["langgraph_node"] == parent["name"]
        assert run["trace_id"] == graph_runs[0]["id"]
        m = meta(run)
        assert (m["stage"], m["role"], m["round"]) == (call.stage, call.role, call.round)
        assert (m["protocol"], m["case"], m["ls_model_name"], m["ls_provider"]) == (
            "consilium", trace_.case_id, call.model, "scripted")
        assert m["usage_metadata"]["input_tokens"] == call.usage.input_tokens
        assert m["usage_metadata"]["output_tokens"] == call.usage.output_tokens
        (batch,) = run["inputs"]["messages"]
        assert [msg["kwargs"]["content"] for msg in batch] == [msg.content for msg in call.messages]
        ((generation,),) = run["outputs"]["generations"]
        assert generation["text"] == call.response
        usage = run["outputs"]["llm_output"]["token_usage"]
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (call.usage.input_tokens,
                                                                        call.usage.output_tokens)
        assert run.get("end_time") and run.get("start_time")
        assert not run.get("error")

    assert captured.bodies
    assert all(API_KEY.encode() not in body for body in captured.bodies)
    assert all(API_KEY not in json.dumps(r.get("extra", {})) for r in runs.values())


class _Heard(BaseCallbackHandler):
    """A user's own LangChain callback handler."""

    def __init__(self) -> None:
        self.chat: list[tuple[UUID, UUID | None, dict[str, Any]]] = []
        self.chains: dict[UUID, str] = {}
        self.ended: list[UUID] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.chains[run_id] = str(kwargs.get("name"))

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID,
                            parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                            **kwargs: Any) -> None:
        self.chat.append((run_id, parent_run_id, dict(metadata or {})))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.ended.append(run_id)


def test_a_users_callback_handler_hears_the_calls_of_a_run_inside_its_runnable() -> None:
    heard = _Heard()

    async def consult(case: str) -> list[TraceBase]:
        return await api.arun(case, variants=["free-form"], model=PANEL)

    (trace_,) = asyncio.run(RunnableLambda(consult).ainvoke(str(CASE), config={"callbacks": [heard]}))
    assert len(heard.chat) == len(heard.ended) == len(trace_.calls)
    nodes = set(consilium_graph().nodes)
    assert all(heard.chains[parent] in nodes for _, parent, _ in heard.chat if parent is not None)
    assert sorted(_key(m["stage"], m["role"], m["round"]) for *_, m in heard.chat) == [
        _key(c.stage, c.role, c.round) for c in _calls(trace_)]
    assert "consult" in heard.chains.values() and "consilium" in heard.chains.values()


# --- OpenTelemetry -------------------------------------------------------------------------------------------

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if not getattr(provider, "_consilium_test_exporter", False):
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        provider._consilium_test_exporter = True  # type: ignore[attr-defined]
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def _tree(finished: tuple[ReadableSpan, ...]) -> tuple[ReadableSpan, dict[int, ReadableSpan]]:
    by_id = {s.context.span_id: s for s in finished if s.context is not None}
    roots = [s for s in finished if s.parent is None]
    assert len(roots) == 1
    return roots[0], by_id


def _parent(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> ReadableSpan:
    assert span.parent is not None
    return by_id[span.parent.span_id]


def test_otel_spans_for_the_run_its_nodes_and_its_calls(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    trace_ = _simulate(tmp_path / "runs", "--otel")
    run, by_id = _tree(spans.get_finished_spans())
    attrs = dict(run.attributes or {})
    assert run.name == "invoke_workflow consilium"
    assert attrs["gen_ai.operation.name"] == "invoke_workflow"
    assert (attrs["consilium.protocol"], attrs["consilium.case"], attrs["consilium.format"]) == (
        "consilium", trace_.case_id, "free-form")
    nodes = set(consilium_graph().nodes)
    node_spans = [s for s in by_id.values() if (s.attributes or {}).get("langgraph.node")]
    assert node_spans and all(_parent(s, by_id) is run and s.name in nodes for s in node_spans)
    chat = [s for s in by_id.values() if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert len(chat) == len(trace_.calls)

    def key(s: ReadableSpan) -> tuple[Any, ...]:
        a = s.attributes or {}
        return (*_key(str(a["consilium.stage"]), a.get("consilium.role"), a.get("consilium.round")),  # type: ignore[arg-type]
                a["gen_ai.usage.input_tokens"])

    for span, call in zip(sorted(chat, key=key), _calls(trace_), strict=True):
        a = dict(span.attributes or {})
        assert _parent(span, by_id) in node_spans
        assert span.kind == trace.SpanKind.CLIENT and span.name == f"chat {call.model}"
        assert (a["consilium.stage"], a.get("consilium.role"), a.get("consilium.round")) == (
            call.stage, call.role, call.round)
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (
            call.usage.input_tokens, call.usage.output_tokens)
        assert a["gen_ai.request.model"] == call.model and a["gen_ai.provider.name"] == "scripted"
        assert a["gen_ai.request.max_tokens"] == call.settings.max_tokens
        reasons = a.get("gen_ai.response.finish_reasons", ())
        assert isinstance(reasons, tuple) and reasons == ((call.finish_reason,) if call.finish_reason else ())
    assert sum(int(str((s.attributes or {})["gen_ai.usage.output_tokens"])) for s in chat) == \
        trace_.usage.total.output_tokens


def test_a_failed_run_ends_its_span_with_the_error(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    code = main(["simulate", "--case", str(CASE), "--model", PANEL, "--format", "free-form",
                 "--out", str(tmp_path), "--budget-tokens", "1500", "--otel"])
    assert code == 1  # the run is recorded as failed
    (path,) = tmp_path.glob("*/*.trace.json")
    failed = read_trace(path)
    assert failed.status == "failed" and failed.calls
    run, by_id = _tree(spans.get_finished_spans())
    assert run.status.status_code == trace.StatusCode.ERROR
    assert "BudgetExceededError" in (run.status.description or "")
    chat = [s for s in by_id.values() if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert len(chat) == len(failed.calls)


def test_otel_by_environment_for_a_board_and_off_by_default(spans: InMemorySpanExporter, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (plain,) = api.run(BOARD_CASE, protocol="board", variants=["agents"], model=PANEL)
    assert plain.status == "completed" and spans.get_finished_spans() == ()
    monkeypatch.setenv("CONSILIUM_OTEL", "1")
    (board,) = api.run(BOARD_CASE, protocol="board", variants=["agents"], model=PANEL)
    run, by_id = _tree(spans.get_finished_spans())
    assert run.name == "invoke_workflow board" and (run.attributes or {})["consilium.mode"] == "agents"
    chat = [s for s in by_id.values() if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert len(chat) == len(board.calls) > 0
    assert all((_parent(s, by_id).attributes or {}).get("langgraph.node") for s in chat)


def test_otel_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)  # as if opentelemetry were not installed
    code = main(["simulate", "--case", str(CASE), "--model", PANEL, "--format", "free-form",
                 "--out", str(tmp_path), "--otel"])
    assert code == 2
    assert "pip install 'consilium[otel]'" in capsys.readouterr().err


# --- a secret in a model's error ------------------------------------------------------------------------------


def _failed_openai_run(base_url: str, out: Path, *extra: str) -> TraceBase:
    """A run whose first call gets HTTP 400 with the API key echoed in the body: recorded as failed."""
    code = main(["simulate", "--case", str(CASE), "--model", "openai:stub", "--base-url", base_url,
                 "--format", "free-form", "--out", str(out), *extra])
    assert code == 1
    (path,) = out.glob("*/*.trace.json")
    failed = read_trace(path)
    assert failed.status == "failed" and "HTTP 400" in (failed.error or "") and "***" in (failed.error or "")
    return failed


@pytest.mark.localhost
def test_a_key_in_a_model_error_is_in_no_span(spans: InMemorySpanExporter, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with key_echo_server() as url:
        _failed_openai_run(url, tmp_path, "--otel")
    finished = spans.get_finished_spans()
    events = [e for s in finished for e in s.events if e.name == "exception"]
    assert events and any("HTTP 400" in str((e.attributes or {}).get("exception.message")) for e in events)
    assert any(s.status.status_code == trace.StatusCode.ERROR and "HTTP 400" in (s.status.description or "")
               for s in finished)
    dumped = "".join(s.to_json() for s in finished)
    assert SECRET not in dumped


@pytest.mark.localhost
@pytest.mark.parametrize("multipart", [False, True], ids=["batch", "multipart"])
def test_a_key_in_a_model_error_is_in_no_langsmith_run(multipart: bool, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with langsmith_capture(multipart=multipart) as capture, key_echo_server() as url:
        _failed_openai_run(url, tmp_path)
        wait_for_all_tracers()
    assert any(p.startswith("/runs/multipart") for p in capture.paths) is multipart
    sent = b"".join(capture.bodies)
    assert b"HTTP 400" in sent  # the error went to LangSmith, masked
    assert SECRET.encode() not in sent


def test_a_langchain_models_calls_name_its_own_provider(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    """LangChain's own ls_provider for the model (here its fake chat model's), not "consilium"."""
    assert main(["simulate", "--case", str(CASE), "--model", "langchain:support.langchain_fakes:panel", "--format",
                 "structured", "--out", str(tmp_path), "--otel"]) == 0
    chat = [s for s in spans.get_finished_spans() if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert len(chat) == 8
    assert {(s.attributes or {}).get("gen_ai.provider.name") for s in chat} == {"fakemessageslistchatmodel"}
