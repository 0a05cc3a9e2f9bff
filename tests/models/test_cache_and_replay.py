"""The SQLite response cache and the replay backend, over the scripted backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consilium.errors import ReplayDivergenceError
from consilium.models import CallRecorder, CallTag, GenerationSettings, Message, ModelRequest, OutputSchema, for_run
from consilium.models.backends.replay import ReplayModel
from consilium.models.backends.scripted import Script, ScriptedModel, ScriptRule
from consilium.models.types import Stage
from consilium.models.wrappers import CachedModel


def req(text: str, *, stage: Stage = "opinion", role: str = "cardiology", temperature: float = 0.0,
        schema: OutputSchema | None = None) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), tag=CallTag(stage=stage, role=role),
                        settings=GenerationSettings(temperature=temperature), schema=schema)


async def test_identical_requests_hit_and_any_change_misses(tmp_path: Path) -> None:
    scripted = ScriptedModel(Script(rules=[ScriptRule(responses=["one", "two", "three", "four"])]))
    cached = CachedModel(scripted, tmp_path / "c.sqlite")
    first = await cached.generate(req("case A"))
    again = await cached.generate(req("case A"))
    assert (first.text, again.text, again.cached, first.cached) == ("one", "one", True, False)
    assert again.usage == first.usage
    assert (await cached.generate(req("case B"))).text == "two"
    assert (await cached.generate(req("case A", temperature=0.7))).text == "three"
    assert (cached.hits, cached.misses, scripted.calls) == (1, 3, 3)
    await cached.aclose()
    # Persisted: a new process (a new wrapper) hits without calling the model.
    reopened = CachedModel(ScriptedModel(Script(default="never")), tmp_path / "c.sqlite")
    assert (await reopened.generate(req("case A"))).text == "one"
    await reopened.aclose()


async def test_invalid_structured_output_is_never_cached(tmp_path: Path) -> None:
    schema = OutputSchema.from_json_schema({"type": "object", "required": ["vote"]}, name="vote")
    scripted = ScriptedModel(Script(rules=[ScriptRule(responses=["nope", '{"vote": "accept"}'])]))
    cached = CachedModel(scripted, tmp_path / "c.sqlite")
    assert (await cached.generate(req("x", schema=schema))).text == "nope"
    assert (await cached.generate(req("x", schema=schema))).text == '{"vote": "accept"}'
    assert (await cached.generate(req("x", schema=schema))).cached
    await cached.aclose()


async def test_replay_serves_recorded_calls_and_reports_divergence(tmp_path: Path) -> None:
    recorder = CallRecorder()
    live = for_run(ScriptedModel(Script(rules=[ScriptRule(responses=["bad", '{"vote": "accept"}'])])), recorder)
    schema = OutputSchema.from_json_schema({"type": "object", "required": ["vote"]}, name="vote")
    original = await live.generate(req("case", stage="vote", schema=schema))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"model": "scripted", "calls": [c.model_dump(mode="json") for c in recorder.calls]}))

    replay = ReplayModel.from_trace(trace)
    replayed_recorder = CallRecorder()
    replayed = await for_run(replay, replayed_recorder).generate(req("case", stage="vote", schema=schema))
    assert replayed.parsed == original.parsed and replay.served == 2 and replay.remaining() == 0
    assert [c.response for c in replayed_recorder.calls] == [c.response for c in recorder.calls]
    assert replayed_recorder.ledger.total == recorder.ledger.total

    fresh = ReplayModel.from_trace(trace)
    with pytest.raises(ReplayDivergenceError, match=r"stage=vote role=cardiology .*message 0 \(user\) differs"):
        await fresh.generate(req("another case", stage="vote", schema=schema))
    with pytest.raises(ReplayDivergenceError, match="no further recorded call"):
        await fresh.generate(req("case", stage="opinion"))


ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"


def test_replay_says_different_when_a_trace_holds_a_call_its_run_could_not_have_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import consilium
    from consilium.cli import main

    assert main(["simulate", "--case", str(CASE), "--model", PANEL, "--formats", "free-form", "--out",
                 str(tmp_path)]) == 0
    [path] = tmp_path.glob("*/*.trace.json")
    capsys.readouterr()
    assert main(["replay", str(path)]) == 0  # as written: every recorded call is made once
    assert "identical (12 recorded calls served" in capsys.readouterr().out
    trace = json.loads(path.read_text())
    # Two processes resuming one run each made the radiologist's round-1 vote: it is in the trace twice.
    [vote] = [c for c in trace["calls"] if (c["stage"], c["role"], c["round"]) == ("vote", "radiologist", 1)]
    twice = tmp_path / "twice.trace.json"
    twice.write_text(json.dumps({**trace, "calls": [*trace["calls"], {**vote, "index": 12}]}))
    assert main(["replay", str(twice)]) == 1
    said = capsys.readouterr().out
    assert said.startswith(f"{twice}: different: calls[12]: recorded call #12 (stage=vote role=radiologist round=1) "
                           "is one the run does not make: 13 calls recorded, 12 made by the replayed run"), said
    result = consilium.replay(twice)
    assert not result.identical and result.served == 12 and result.difference is not None
    assert result.difference.startswith("calls[12]")
