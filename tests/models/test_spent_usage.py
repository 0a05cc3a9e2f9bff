"""Tokens as generated and tokens spent in this run are kept apart: a response-cache hit spends
nothing and leaves the budget alone, while the trace still says what the answer cost to make;
arms.csv carries both and the cached prompt tokens."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from consilium import aio
from consilium.cases import load_case
from consilium.cli import main
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.run import run_format
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace
from consilium.models import Message, Usage
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.tokens import count_message_tokens
from consilium.models.wrappers import CachedModel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from replicas import fake_replica  # noqa: E402  (benchmarks/replicas.py)

PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
EXAMPLE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
FIXTURES = ROOT / "tests" / "fixtures" / "v1.0"


def _run(model: ScriptedModel | CachedModel, budget: int | None = None) -> Trace:
    config = ConsiliumConfig(budget_tokens=budget)
    return aio.run(run_format(load_case(EXAMPLE), "structured", RunModels(model, model), config, run_id="r"))


def _projected(messages: list[Message], max_tokens: int) -> int:
    return count_message_tokens(messages) + max_tokens


def test_a_cache_hit_spends_nothing_and_leaves_the_budget_alone(tmp_path: Path) -> None:
    cached = CachedModel(ScriptedModel(Script.load(PANEL)), tmp_path / "responses.sqlite")
    first = _run(cached)
    assert first.status == "completed"
    assert first.usage.spent == first.usage.total and first.usage.cache_hits == 0
    # A budget that fits the largest single call but not the run's tokens as generated.
    budget = max(_projected(c.messages, c.settings.max_tokens) for c in first.calls) + 1
    assert budget < first.usage.total.total_tokens
    uncached = _run(ScriptedModel(Script.load(PANEL)), budget)
    assert uncached.status == "failed" and "BudgetExceededError" in (uncached.error or "")

    again = _run(cached, budget)
    assert again.status == "completed", again.error
    assert all(c.cached for c in again.calls)
    assert again.usage.cache_hits == len(again.calls) == len(first.calls)
    assert again.usage.spent == Usage()
    # As generated: the answers cost what the first run paid for them.
    assert again.usage.total == first.usage.total
    assert again.usage.by_stage == first.usage.by_stage


def test_an_older_trace_reads_with_its_spent_usage_from_its_calls() -> None:
    path = FIXTURES / "diagnostic-myocarditis.free-form.trace.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert "spent" not in raw["usage"]
    calls = raw["calls"]
    expected_input = sum(c["usage"]["input_tokens"] for c in calls if not c.get("cached"))
    expected_output = sum(c["usage"]["output_tokens"] for c in calls if not c.get("cached"))
    trace = read_trace(path)
    assert trace.usage.spent is not None
    assert (trace.usage.spent.input_tokens, trace.usage.spent.output_tokens) == (expected_input, expected_output)
    assert trace.usage.cache_hits == sum(1 for c in calls if c.get("cached"))


def _arms(out: Path) -> list[dict[str, str]]:
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    with open(run_dir / "arms.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _from_trace(out: Path, row: dict[str, str]) -> dict[str, int]:
    """The columns arms.csv should hold, summed here from the trace file's calls."""
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    calls = json.loads((run_dir / row["trace"]).read_text(encoding="utf-8"))["calls"]
    fresh = [c for c in calls if not c["cached"]]
    return {"input_tokens": sum(c["usage"]["input_tokens"] for c in calls),
            "cached_tokens": sum(c["usage"]["cached_tokens"] for c in calls),
            "cache_hits": len(calls) - len(fresh), "calls": len(calls),
            "spent_input_tokens": sum(c["usage"]["input_tokens"] for c in fresh),
            "spent_output_tokens": sum(c["usage"]["output_tokens"] for c in fresh),
            "spent_cached_tokens": sum(c["usage"]["cached_tokens"] for c in fresh), "spent_calls": len(fresh)}


@pytest.mark.localhost
def test_arms_csv_has_cached_and_spent_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "c.yaml").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    with fake_replica(latency_ms=1.0) as url:
        for out in ("first", "second"):  # the second answered from the response cache the first filled
            assert main(["cohort", "--cases", str(cases), "--model", "openai:fake", "--base-url", url,
                         "--out", str(tmp_path / out)]) == 0
    capsys.readouterr()
    first, second = _arms(tmp_path / "first"), _arms(tmp_path / "second")
    assert len(first) == len(second) == 2
    for out, rows in (("first", first), ("second", second)):
        for row in rows:
            expected = _from_trace(tmp_path / out, row)
            assert {k: int(row[k]) for k in expected} == expected
    for row in first:
        assert int(row["cached_tokens"]) > 0  # the server served the case's prefix from its cache
        assert row["spent_input_tokens"] == row["input_tokens"] and row["cache_hits"] == "0"
    for before, row in zip(sorted(first, key=lambda r: r["format"]), sorted(second, key=lambda r: r["format"]),
                           strict=True):
        assert (row["input_tokens"], row["output_tokens"], row["cached_tokens"]) == (
            before["input_tokens"], before["output_tokens"], before["cached_tokens"])
        assert (row["spent_input_tokens"], row["spent_output_tokens"], row["spent_calls"]) == ("0", "0", "0")
        assert int(row["cache_hits"]) == int(row["calls"]) > 0


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.embedded
async def test_llama_cpp_reports_the_prompt_tokens_it_reused() -> None:
    from consilium.models import CallTag, GenerationSettings, ModelRequest
    from consilium.models.factory import open_backend

    model = open_backend("embedded")
    case = load_case(EXAMPLE).render()
    system = Message(role="system", content="You are a concise clinical assistant.")

    def ask(question: str) -> ModelRequest:
        return ModelRequest(messages=(system, Message(role="user", content=f"{case}\n\n{question}")),
                            settings=GenerationSettings(max_tokens=8), tag=CallTag(stage="check"))

    try:
        first = await model.generate(ask("What is the most likely diagnosis?"))
        llm = model._llm  # type: ignore[attr-defined]
        held = [int(t) for t in llm._input_ids]  # the context after the first call: its prompt and answer
        second = await model.generate(ask("Which test would you order first?"))
        prompt = [int(t) for t in llm._input_ids[:second.usage.input_tokens]]
    finally:
        await model.aclose()
    assert first.usage.cached_tokens == 0  # a fresh context holds nothing
    shared = _common_prefix(held, prompt)
    assert 0 < shared < second.usage.input_tokens
    assert second.usage.cached_tokens == shared


_CHECK_RULES: list[dict[str, Any]] = [
    {"contains": ["Which specialty"], "json": {"specialty": "Cardiology", "urgency": "emergency"}},
    {"contains": [], "response": "An inferior ST-elevation myocardial infarction."},
]


@pytest.mark.localhost
def test_models_check_says_how_vllm_reports_cached_tokens_when_the_server_reports_none(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from support.localserver import Behaviour, scripted_server

    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    answers: list[Behaviour] = [("ok", "An inferior STEMI."),
                                ("ok", '{"specialty": "Cardiology", "urgency": "emergency"}')]
    with scripted_server(answers) as server:  # its usage has no prompt_tokens_details
        assert main(["models", "check", "--model", "openai:fake", "--base-url", server.base_url, "--no-cache"]) == 0
    silent = capsys.readouterr().out
    assert "--enable-prompt-tokens-details" in silent
    with fake_replica(latency_ms=1.0, rules=_CHECK_RULES) as url:  # reports them, as vLLM with the flag
        assert main(["models", "check", "--model", "openai:fake", "--base-url", url]) == 0
    reporting = capsys.readouterr().out
    assert "--enable-prompt-tokens-details" not in reporting
    cached = [int(line.split("(")[1].split(" cached")[0]) for line in reporting.splitlines() if " cached)" in line]
    # The first call found an empty cache; the second, its system message and case, in whole 16-token blocks.
    assert cached[0] == 0 and cached[1] > 0 and cached[1] % 16 == 0
