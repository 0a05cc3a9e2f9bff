"""The scripted backend, the structured-output repair loop and call recording, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from consilium.errors import ModelError, ModelOutputError, UserError
from consilium.models import CallRecorder, CallTag, Message, ModelRequest, OutputSchema, for_run
from consilium.models.backends.scripted import Script, ScriptedModel, ScriptRule
from consilium.models.factory import build_model


class Verdict(BaseModel):
    vote: str
    reason: str


def request(stage: str, role: str | None = None, round: int | None = None, *,
            schema: OutputSchema | None = None, text: str = "the case") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), tag=CallTag(stage=stage, role=role,
                                                                                     round=round), schema=schema)


async def test_rules_match_by_stage_role_round_and_run_out() -> None:
    model = ScriptedModel(Script(rules=[
        ScriptRule(stage="vote", role="cardiology", round=1, response="first {role} r{round}", times=1),
        ScriptRule(stage="vote", responses=["a", "b"]),
    ], default="fallback {stage}"))
    assert (await model.generate(request("vote", "cardiology", 1))).text == "first cardiology r1"
    assert (await model.generate(request("vote", "cardiology", 1))).text == "a"
    assert (await model.generate(request("vote", "neurology", 2))).text == "b"
    assert (await model.generate(request("vote", "neurology", 3))).text == "b"  # the last one repeats
    assert (await model.generate(request("opinion"))).text == "fallback opinion"
    response = await model.generate(request("opinion"))
    assert response.usage.estimated and response.usage.input_tokens > 0 and response.usage.calls == 1


async def test_no_matching_rule_names_the_call() -> None:
    model = ScriptedModel(Script(rules=[ScriptRule(stage="vote", response="x")]))
    with pytest.raises(ModelError, match="stage=opinion role=pathology round=None"):
        await model.generate(request("opinion", "pathology"))


def test_script_file_loads_and_bad_files_name_the_field(tmp_path: Path) -> None:
    good = tmp_path / "script.yaml"
    good.write_text("model: demo\nrules:\n  - stage: vote\n    json: {vote: accept, reason: fine}\n")
    assert build_model(f"scripted:{good}").model_id == "demo"
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - stage: vote\n")
    with pytest.raises(UserError, match=r"bad.yaml: rules.0: Value error, a rule needs exactly one"):
        ScriptedModel.from_file(bad)
    with pytest.raises(UserError, match="not found"):
        ScriptedModel.from_file(tmp_path / "missing.yaml")


async def test_invalid_structured_output_is_repaired_and_every_attempt_recorded() -> None:
    scripted = ScriptedModel(Script(rules=[
        ScriptRule(stage="vote", responses=["I accept", '{"vote": "accept"}', '{"vote": "accept", "reason": "ok"}']),
    ]))
    recorder = CallRecorder()
    model = for_run(scripted, recorder, max_repairs=2)
    response = await model.generate(request("vote", "cardiology", 1, schema=OutputSchema.from_model(Verdict)))
    assert response.parsed == {"vote": "accept", "reason": "ok"}
    assert [c.response for c in recorder.calls] == ["I accept", '{"vote": "accept"}',
                                                    '{"vote": "accept", "reason": "ok"}']
    # The second attempt saw the first answer and the validation error.
    second = recorder.calls[1].messages
    assert second[-2].content == "I accept" and "not valid JSON" in second[-1].content
    assert "reason: Field required" in recorder.calls[2].messages[-1].content
    assert recorder.ledger.total.calls == 3
    assert [c.parsed for c in recorder.calls] == [None, None, {"vote": "accept", "reason": "ok"}]
    assert recorder.calls[0].error and "not valid JSON" in recorder.calls[0].error and recorder.calls[2].error is None


async def test_output_still_invalid_after_repairs_is_a_typed_failure() -> None:
    model = for_run(ScriptedModel(Script(default="not json")), CallRecorder(), max_repairs=1)
    with pytest.raises(ModelOutputError, match=r"stage vote .* invalid Verdict output after 2 attempts") as info:
        await model.generate(request("vote", "x", 1, schema=OutputSchema.from_model(Verdict)))
    assert info.value.last_text == "not json"


async def test_python_responder_answers_first() -> None:
    model = ScriptedModel(responder=lambda req: {"vote": "dissent", "reason": req.tag.role} if req.tag.role else None,
                          model_id="fn")
    assert (await model.generate(request("vote", "neurology"))).text == '{"vote": "dissent", "reason": "neurology"}'
    with pytest.raises(ModelError):
        await model.generate(request("vote"))
