"""The wrapper base (models/wrappers/base.py) and a call tag's stage, one the protocols declared
(consilium/stages.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from pydantic import ValidationError

from consilium.models import CallRecord, CallRecorder, CallTag, Message, ModelRequest, ModelResponse
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.wrappers import (
    AnswerCheckModel,
    CachedModel,
    ConcurrencyLimitedModel,
    RecordingModel,
    RetryingModel,
    StructuredOutputModel,
    WrapperModel,
)
from consilium.models.wrappers.pool import PooledModel
from consilium.stages import declared_stages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Closable(ScriptedModel):
    """A scripted model with a stage limit, images and an endpoint of its own, that says when it is closed."""

    endpoint = "somewhere:1"
    stage_max_tokens: Mapping[str, int] = {"opinion": 64}

    def __init__(self) -> None:
        super().__init__(Script(model="inner-model", images=True, default="an answer", enforces_schemas=True))
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def wrappers(inner: Closable, tmp_path: Path) -> list[WrapperModel]:
    return [AnswerCheckModel(inner), CachedModel(inner, tmp_path / "cache.sqlite"), ConcurrencyLimitedModel(inner, 2),
            RecordingModel(inner, CallRecorder()), RetryingModel(inner), StructuredOutputModel(inner)]


async def test_every_wrapper_presents_its_inner_model_and_closes_it(tmp_path: Path) -> None:
    inner = Closable()
    made = wrappers(inner, tmp_path)
    for model in made:
        assert isinstance(model, WrapperModel) and model.inner is inner
        assert (model.model_id, model.endpoint, model.supports_images, dict(model.stage_max_tokens),
                model.enforces_schemas) == ("inner-model", "somewhere:1", True, {"opinion": 64}, True), \
            type(model).__name__
        await model.aclose()
    assert inner.closed == len(made)


async def test_a_wrapper_states_only_what_it_changes() -> None:
    class Shouting(WrapperModel):
        async def generate(self, request: ModelRequest) -> ModelResponse:
            response = await super().generate(request)
            return response.model_copy(update={"text": response.text.upper()})

    inner = Closable()
    model = Shouting(inner)
    answer = await model.generate(ModelRequest(messages=(Message(role="user", content="hi"),),
                                               tag=CallTag(stage="opinion")))
    assert answer.text == "AN ANSWER" and model.model_id == "inner-model"
    await model.aclose()
    assert inner.closed == 1


def test_a_pool_is_several_models_not_a_wrapper_of_one() -> None:
    replicas = [ScriptedModel(Script(model="m", images=True)), ScriptedModel(Script(model="m"))]
    pool = PooledModel(replicas)
    assert not isinstance(pool, WrapperModel)
    assert pool.endpoint == "pool(scripted,scripted)" and pool.supports_images is False
    # A schema is enforced by a pool only where every replica enforces it: any of them may answer.
    enforcing = [ScriptedModel(Script(model="m", enforces_schemas=True)) for _ in range(2)]
    assert PooledModel(enforcing).enforces_schemas is True
    assert PooledModel([*enforcing, ScriptedModel(Script(model="m"))]).enforces_schemas is False


def test_a_misspelt_stage_is_refused() -> None:
    with pytest.raises(ValidationError, match="opinon"):
        CallTag(stage="opinon")  # type: ignore[arg-type]
    for stage in declared_stages():
        assert CallTag(stage=stage).stage == stage
    assert ModelRequest(messages=()).tag.stage == "check"


def test_the_shipped_scripts_name_only_stages() -> None:
    """A script rule's stage is free text (a rule for no stage just never matches): the shipped ones are real."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "models"
    named = {rule.stage for path in examples.glob("*.yaml") for rule in Script.load(path).rules if rule.stage}
    assert named and named <= set(declared_stages())


def test_traces_written_before_still_read_and_their_stages_are_stages() -> None:
    paths = sorted(FIXTURES.rglob("*.json"))
    seen: set[str] = set()
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        for call in data.get("calls", []) if isinstance(data, dict) else []:
            record = CallRecord.model_validate(call)
            seen.add(record.stage)
            CallTag(stage=record.stage, role=record.role, round=record.round)  # type: ignore[arg-type]
    assert {"role_assignment", "opinion", "synthesis", "vote", "board_turn", "judge"} <= seen
