"""The embedded SmolLM2 model, run for real (small max_tokens keeps it quick)."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from consilium.cli import main
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
