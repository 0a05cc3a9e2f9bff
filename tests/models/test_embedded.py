"""The embedded SmolLM2 model, run for real (small max_tokens keeps it quick)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from consilium.cli import main
from consilium.graphs.board.trace import BoardTrace
from consilium.graphs.registry import read_trace
from consilium.models import CallRecorder, CallTag, GenerationSettings, Message, ModelRequest, OutputSchema, for_run
from consilium.models.factory import ModelOptions, build_model

pytestmark = pytest.mark.embedded


class Triage(BaseModel):
    specialty: str
    urgency: Literal["routine", "urgent", "emergency"]


async def test_embedded_plain_and_schema_constrained_generation() -> None:
    recorder = CallRecorder()
    model = for_run(build_model("embedded", ModelOptions(cache=False)), recorder)
    try:
        plain = await model.generate(ModelRequest(
            messages=(Message(role="user", content="Name one symptom of pneumonia."),),
            settings=GenerationSettings(max_tokens=16), tag=CallTag(stage="check")))
        structured = await model.generate(ModelRequest(
            messages=(Message(role="user", content="Chest pain, ST elevation. Which specialty, how urgent? JSON."),),
            settings=GenerationSettings(max_tokens=64), schema=OutputSchema.from_model(Triage),
            tag=CallTag(stage="check")))
    finally:
        await model.aclose()
    assert plain.text.strip() and plain.model == "SmolLM2-135M-Instruct.Q4_1"
    assert 0 < plain.usage.output_tokens <= 16 and not plain.usage.estimated
    assert Triage.model_validate(structured.parsed).urgency in ("routine", "urgent", "emergency")
    assert recorder.ledger.total.calls >= 2


def test_models_check_command_runs_the_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "check", "--max-tokens", "12"]) == 0
    out = capsys.readouterr().out
    assert "SmolLM2-135M-Instruct.Q4_1" in out and "tokens/s" in out and "[structured]" in out


def test_simulate_both_formats_with_the_embedded_model_replays_identically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml"
    out = tmp_path / "runs"
    code = main(["simulate", "--case", str(case), "--format", "both", "--out", str(out), "--no-cache",
                 "--min-roles", "2", "--max-roles", "2", "--max-rounds", "2", "--max-tokens", "160"])
    paths = sorted(out.glob("*/*.trace.json"))
    traces = [read_trace(p) for p in paths]
    assert [t.format for t in traces] == ["free-form", "structured"]
    assert code == (0 if all(t.status == "completed" for t in traces) else 1)
    for trace in traces:
        assert trace.model == "SmolLM2-135M-Instruct.Q4_1" and trace.roles
        assert trace.usage.total.calls == len(trace.calls) > 0 and not trace.usage.total.estimated
    assert traces[0].roles == traces[1].roles and traces[1].role_assignment_shared
    capsys.readouterr()
    assert main(["replay", *map(str, paths)]) == 0
    assert capsys.readouterr().out.count(": identical (") == 2


@pytest.mark.parametrize("mode", ["agents", "single"])
def test_board_with_the_embedded_model_replays_identically(mode: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    case = Path(__file__).resolve().parents[2] / "examples" / "cases" / "tumor-board-nsclc.yaml"
    out = tmp_path / "runs"
    code = main(["board", "--case", str(case), "--mode", mode, "--out", str(out), "--no-cache", "--max-turns", "4",
                 "--min-roles", "2", "--max-roles", "2", "--max-tokens", "200"])
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace) and trace.mode == mode
    assert code == (0 if trace.status == "completed" else 1)
    assert trace.validation is not None or trace.status == "failed"
    assert trace.usage.total.calls == len(trace.calls) > 0 and not trace.usage.total.estimated
    if mode == "agents" and trace.status == "completed":
        assert trace.turns[0].role == "Moderator" and len(trace.turns) <= 4
    capsys.readouterr()
    assert main(["replay", str(path)]) == 0
    assert ": identical (" in capsys.readouterr().out


async def test_long_string_bounds_do_not_break_the_grammar() -> None:
    """llama.cpp rejects (and llama-cpp-python then crashes on) a grammar with maxLength > 1000."""
    schema = OutputSchema.from_json_schema({"type": "object", "required": ["text"], "additionalProperties": False,
                                            "properties": {"text": {"type": "string", "maxLength": 6000}}})
    model = for_run(build_model("embedded", ModelOptions(cache=False)), CallRecorder())
    try:
        response = await model.generate(ModelRequest(
            messages=(Message(role="user", content="Say hello in JSON."),), settings=GenerationSettings(max_tokens=24),
            schema=schema, tag=CallTag(stage="check")))
    finally:
        await model.aclose()
    assert isinstance(response.parsed["text"], str)


def test_embedded_judge_scores_or_marks_not_evaluable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "panel.json"
    script.write_text(json.dumps({"rules": [
        {"stage": "role_assignment", "json": {"primary": {"label": "Cardiologist", "justification": "x"},
                                              "supporting": [{"label": "Radiologist", "justification": "y"}]}},
        {"stage": "opinion", "response": "Likely myocarditis; confirm with cardiac MRI."},
        {"stage": "synthesis", "response": "Acute myocarditis is most likely. Cardiac MRI confirms it. Admit for "
                                           "monitoring."},
        {"stage": "vote", "json": {"vote": "accept", "reason": "agree", "requested_change": None}}]}))
    case = Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml"
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(case), "--model", f"scripted:{script}", "--out", str(out),
                 "--format", "free-form", "--min-roles", "2"]) == 0
    [run_dir] = list(out.iterdir())
    assert main(["judge", str(run_dir), "--rubric", "otb-conclusion-alignment", "--judge-model", "embedded",
                 "--no-cache", "--max-tokens", "160"]) == 0
    [path] = list(run_dir.glob("*.judge.otb-conclusion-alignment.json"))
    record = json.loads(path.read_text())
    [item] = record["items"]
    assert record["judge_model"] == "SmolLM2-135M-Instruct.Q4_1" and record["usage"]["total"]["calls"] >= 1
    assert (item["score"] in (1, 2, 3, 4, 5)) != item["not_evaluable"]
    assert item["reason"] if item["not_evaluable"] else item["rationale"] is not None
