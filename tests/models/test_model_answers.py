"""No failure passed off as a result: empty and cut-off answers are model
errors at every stage, a bad server body is a model error, and the cache key holds what reaches the model."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.faultserver import BAD_TYPES, EMPTY_ANSWERS, fault_server

from consilium.cli import main
from consilium.errors import IncompleteAnswerError, ModelError
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace
from consilium.models import (
    CallRecorder,
    CallTag,
    GenerationSettings,
    Message,
    ModelOptions,
    ModelRequest,
    OutputSchema,
    build_model,
    for_run,
)
from consilium.models.backends.llama import LlamaCppModel, RepetitionStop, _trim_to_sentence
from consilium.models.backends.openai_compat import OpenAICompatModel
from consilium.models.backends.openai_wire import MalformedCompletion, parse_completion
from consilium.models.backends.replay import ReplayModel
from consilium.models.backends.scripted import Script, ScriptedModel, ScriptRule
from consilium.models.wrappers import CachedModel, RetryingModel, RetryPolicy
from consilium.models.wrappers.cache import cache_key

ROOT = Path(__file__).resolve().parents[2]
CONSULT = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
BOARD_CASE = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
VOTE = OutputSchema.from_json_schema({"type": "object", "required": ["vote"]}, name="vote")
FAST = RetryPolicy(max_attempts=2, base_delay_s=0.0, max_delay_s=0.0)


def req(text: str = "case", *, stage: str = "opinion", max_tokens: int = 512, schema: OutputSchema | None = None,
        images: tuple[str, ...] = ()) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text, images=images),), schema=schema,
                        settings=GenerationSettings(max_tokens=max_tokens), tag=CallTag(stage=stage, role="r"))


def scripted(*rules: ScriptRule, images: bool = False) -> ScriptedModel:
    return ScriptedModel(Script(rules=list(rules), images=images))


# --- the answer check, through the per-run layers ------------------------------------------------


async def test_an_empty_answer_is_asked_again_and_every_attempt_is_recorded() -> None:
    recorder = CallRecorder()
    model = for_run(scripted(ScriptRule(responses=["", "  \n", "My opinion."])), recorder)
    response = await model.generate(req())
    assert response.text == "My opinion."
    assert [c.error for c in recorder.calls] == ["the answer is empty (finish_reason stop)"] * 2 + [None]
    assert recorder.ledger.total.calls == 3


async def test_a_cut_off_answer_is_asked_again_with_twice_the_room() -> None:
    recorder = CallRecorder()
    model = for_run(scripted(ScriptRule(times=2, response="My opin", finish_reason="length"),
                             ScriptRule(response="My opinion, whole.")), recorder)
    response = await model.generate(req(max_tokens=300))
    assert response.text == "My opinion, whole."
    # What was sent is what the trace holds: each attempt's own max_tokens.
    assert [c.settings.max_tokens for c in recorder.calls] == [300, 600, 1200]
    assert [c.finish_reason for c in recorder.calls] == ["length", "length", "stop"]
    assert recorder.calls[0].error == "the answer was cut off at max_tokens (finish_reason length)"


async def test_an_answer_that_stays_cut_off_fails_the_stage_and_names_the_budgets() -> None:
    recorder = CallRecorder()
    model = for_run(scripted(ScriptRule(response="always cut", finish_reason="length")), recorder)
    with pytest.raises(IncompleteAnswerError, match=r"stage opinion \(role r, round None\): the answer was cut "
                                                     r"off .* after 3 attempts \(max_tokens 512, 1024, 2048\)") as info:
        await model.generate(req())
    assert info.value.kind == "truncated" and info.value.stage == "opinion" and len(recorder.calls) == 3
    assert recorder.last_attempt is not None and recorder.last_attempt.stage == "opinion"


async def test_a_cut_off_answer_is_not_used_even_when_its_json_parses() -> None:
    recorder = CallRecorder()
    model = for_run(scripted(ScriptRule(times=1, json={"vote": "accept"}, finish_reason="length"),
                             ScriptRule(json={"vote": "dissent"})), recorder)
    response = await model.generate(req(stage="vote", schema=VOTE))
    assert response.parsed == {"vote": "dissent"}
    assert recorder.calls[0].parsed is None and "cut off" in (recorder.calls[0].error or "")


async def test_a_content_filtered_answer_is_not_a_result() -> None:
    model = for_run(scripted(ScriptRule(response="I can't", finish_reason="content_filter")), CallRecorder())
    with pytest.raises(IncompleteAnswerError, match="content filter") as info:
        await model.generate(req())
    assert info.value.kind == "filtered"


async def test_a_stage_limit_lowers_the_first_attempt_is_recorded_and_replays(tmp_path: Path) -> None:
    backend = scripted(ScriptRule(times=1, response="Half an", finish_reason="length"),
                       ScriptRule(response="A whole opinion."))
    backend.stage_max_tokens = {"opinion": 100}
    recorder = CallRecorder()
    await for_run(backend, recorder).generate(req(max_tokens=2048))
    assert [(c.settings.max_tokens, c.stage_limit) for c in recorder.calls] == [(100, 100), (200, 100)]
    # Replay learns the recorded model's stage limits, so the replayed run sends the same requests.
    replay = ReplayModel(recorder.calls)
    replayed = CallRecorder()
    assert (await for_run(replay, replayed).generate(req(max_tokens=2048))).text == "A whole opinion."
    assert [c.request_hash for c in replayed.calls] == [c.request_hash for c in recorder.calls]
    assert replay.remaining() == 0


async def test_an_empty_or_cut_off_answer_is_never_cached_nor_served_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    backend = scripted(ScriptRule(times=1, response=""), ScriptRule(times=1, response="cut", finish_reason="length"),
                       ScriptRule(response="complete"))
    cached = CachedModel(backend, path)
    assert (await cached.generate(req())).text == ""
    assert (await cached.generate(req())).finish_reason == "length"
    assert (await cached.generate(req())).text == "complete"
    assert (await cached.generate(req())).cached and backend.calls == 3
    # An entry holding an empty answer (an older cache) is not served: the model is asked.
    key = cache_key(cached.model_id, cached.endpoint, req("other"))
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO responses VALUES (?, ?, ?, 0)", (key, "scripted", json.dumps({"text": ""})))
    assert (await cached.generate(req("other"))).text == "complete" and backend.calls == 4
    await cached.aclose()


# --- every stage of a run fails on an empty or cut-off answer --------------------------------------

ASSIGNMENT = {"primary": {"label": "Cardiologist", "justification": "troponin rise"},
              "supporting": [{"label": "Cardiac radiologist", "justification": "MRI"},
                             {"label": "Infectious disease specialist", "justification": "viral prodrome"}]}
OPINION = {"clinical_data": "troponin up", "syndromes": "myocardial injury", "differential_diagnosis": "myocarditis",
           "diagnostic_strategy": "cardiac MRI", "management_strategy": "monitor", "final_conclusion": "myocarditis"}
REPORT = {"final_opinion": "myocarditis", "summary": "viral prodrome", "final_differential": "ACS",
          "diagnostic_plan": "MRI", "management_plan": "monitor", "safety_warnings": "arrhythmia"}


def consilium_rules() -> list[dict[str, Any]]:
    """A whole consilium in both formats; the radiologist dissents in round 1, so there is a revision."""
    return [
        {"stage": "role_assignment", "json": ASSIGNMENT},
        {"stage": "opinion", "contains": '"final_conclusion"', "json": OPINION},
        {"stage": "opinion", "response": "As the {role} I favour myocarditis."},
        {"stage": "synthesis", "contains": '"final_opinion"', "json": REPORT},
        {"stage": "synthesis", "response": "Report: myocarditis."},
        {"stage": "vote", "role": "cardiac-radiologist", "round": 1,
         "json": {"vote": "dissent", "reason": "MRI timing", "requested_change": "MRI within 48 h"}},
        {"stage": "vote", "json": {"vote": "accept", "reason": "agree", "requested_change": None}},
        {"stage": "revision", "contains": '"final_opinion": "..."',
         "json": {"changed": True, "change_summary": "MRI timing", "report": dict(REPORT, diagnostic_plan="MRI 48 h")}},
        {"stage": "revision", "json": {"changed": True, "change_summary": "MRI timing", "report": "Report: MRI 48 h."}},
    ]


def defective(rule: dict[str, Any], defect: str) -> dict[str, Any]:
    """``rule``'s answer, cut off (finish_reason length) or empty."""
    if defect == "empty":
        return {k: v for k, v in rule.items() if k not in ("json", "response")} | {"response": ""}
    return rule | {"finish_reason": "length"}


def write(tmp_path: Path, rules: list[dict[str, Any]]) -> str:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"model": "scripted-panel", "rules": rules}))
    return f"scripted:{path}"


@pytest.mark.parametrize("fmt, index, stage, defect", [  # index: the rule of consilium_rules() made defective
    ("free-form", 0, "role_assignment", "truncated"), ("free-form", 2, "opinion", "empty"),
    ("free-form", 2, "opinion", "truncated"), ("free-form", 4, "synthesis", "truncated"),
    ("free-form", 6, "vote", "empty"), ("free-form", 8, "revision", "truncated"),
    ("structured", 1, "opinion", "truncated"), ("structured", 3, "synthesis", "empty"),
    ("structured", 7, "revision", "empty"),
])
def test_every_consilium_stage_fails_on_an_empty_or_cut_off_answer(tmp_path: Path, fmt: str, index: int,
                                                                     stage: str, defect: str) -> None:
    rules = consilium_rules()
    assert rules[index]["stage"] == stage
    rules[index] = defective(rules[index], defect)
    out = tmp_path / "runs"
    code = main(["simulate", "--case", str(CONSULT), "--model", write(tmp_path, rules), "--format", fmt,
                 "--out", str(out)])
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, Trace)
    assert code == 1 and trace.status == "failed" and trace.failed_stage == stage, trace.error
    assert "IncompleteAnswerError" in (trace.error or "") and "after 3 attempts" in (trace.error or "")
    assert trace.final_report is None
    bad = [c for c in trace.calls if c.stage == stage and c.error]
    assert len(bad) >= 3 and all(("empty" if defect == "empty" else "cut off") in (c.error or "") for c in bad)


TRANSCRIPT = ("<discussion>\n<turn 1> Moderator: Radiology, the staging?\n<turn 2> Radiologist: cT2bN1.\n"
              "<turn 3> Moderator: Surgery?\n<turn 4> Thoracic Surgeon: Resectable.\n</discussion>\n"
              "<conclusion>The board recommends surgery. Adjuvant therapy follows pathology.</conclusion>")


def board_rules() -> list[dict[str, Any]]:
    return [
        {"stage": "role_assignment", "json": {"primary": {"label": "Medical oncologist", "justification": "x"},
                                              "supporting": [{"label": "Thoracic surgeon", "justification": "y"}]}},
        {"stage": "board_turn", "role": "moderator",
         "json": {"action": "ask", "speaker": "Medical oncologist", "message": "Your view?"}},
        {"stage": "board_turn", "role": "board", "response": TRANSCRIPT},
        {"stage": "board_turn", "response": "Neoadjuvant therapy first."},
        {"stage": "conclusion", "json": {"conclusion": "The board recommends surgery. Restaging decides the rest."}},
        {"stage": "specialist_turn", "json": {"answer": "Lobectomy is the standard of care."}},
    ]


@pytest.mark.parametrize("command, index, stage, defect", [
    (["board", "--mode", "agents", "--max-turns", "2"], 3, "board_turn", "truncated"),
    (["board", "--mode", "agents", "--max-turns", "2"], 1, "board_turn", "empty"),
    (["board", "--mode", "agents", "--max-turns", "2"], 4, "conclusion", "empty"),
    (["board", "--mode", "single"], 2, "board_turn", "truncated"),
    (["turn", "--role", "Thoracic surgeon", "--question", "Operable?"], 5, "specialist_turn", "truncated"),
])
def test_every_board_stage_fails_on_an_empty_or_cut_off_answer(tmp_path: Path, command: list[str], index: int,
                                                                 stage: str, defect: str) -> None:
    rules = board_rules()
    rules[index] = defective(rules[index], defect)
    out = tmp_path / "runs"
    code = main([*command, "--case", str(BOARD_CASE), "--model", write(tmp_path, rules), "--out", str(out)])
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert code == 1 and trace.status == "failed" and trace.failed_stage == stage, trace.error
    assert "IncompleteAnswerError" in (trace.error or "")


@pytest.mark.parametrize("answer, reason", [
    ({"response": ""}, "the answer is empty"),
    ({"json": {"rationale": "aligned", "score": 4}, "finish_reason": "length"}, "cut off at max_tokens"),
])
def test_an_empty_or_cut_off_judge_answer_is_a_not_evaluable_item(tmp_path: Path, answer: dict[str, Any],
                                                                   reason: str) -> None:
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(CONSULT), "--model", write(tmp_path, consilium_rules()),
                 "--format", "free-form", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"model": "scripted-judge", "rules": [{"stage": "judge", **answer}]}))
    code = main(["judge", str(run_dir), "--rubric", "otb-conclusion-alignment", "--judge-model", f"scripted:{judge}"])
    [record_path] = list(run_dir.glob("*.judge.otb-conclusion-alignment.json"))
    record = json.loads(record_path.read_text())
    assert code in (0, 1) and record["items"]  # every item is there, none scored
    assert all(i["not_evaluable"] and i["score"] is None and reason in i["reason"] for i in record["items"])


def test_models_check_reports_a_cut_off_answer_instead_of_failing(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    model = write(tmp_path, [{"role": "structured", "json": {"specialty": "cardiology", "urgency": "emergency"}},
                             {"role": "plain", "response": "Acute inferior", "finish_reason": "length"}])
    assert main(["models", "check", "--model", model, "--max-tokens", "8"]) == 0
    out = capsys.readouterr().out
    assert "[plain]" in out and "cut off at max_tokens 8" in out and out.count("[plain]") == 1


# --- empty, cut-off and bad answers from an OpenAI-compatible server ------------------------------------------------

SERVED = Script(model="served", rules=[ScriptRule(contains="vote", json={"vote": "accept"})], default="An answer.")


@pytest.mark.localhost
@pytest.mark.parametrize("variant", EMPTY_ANSWERS)
async def test_an_empty_server_answer_is_asked_again_then_fails(variant: str) -> None:
    with fault_server(SERVED, rate=0.0, schedule=[variant, variant, variant, variant, None]) as server:
        model = for_run(build_model("openai:m", ModelOptions(base_url=server.base_url, cache=False, retry=FAST)),
                        CallRecorder())
        try:
            with pytest.raises(IncompleteAnswerError, match=r"empty.* after 3 attempts"):
                await model.generate(req())
            assert server.requests == 3
            assert (await model.generate(req())).text == "An answer."  # the fourth empty one, then a real one
        finally:
            await model.aclose()


@pytest.mark.localhost
async def test_an_empty_answer_is_not_cached_so_the_recovered_server_is_asked(tmp_path: Path) -> None:
    with fault_server(SERVED, rate=0.0, schedule=["content_null"] * 3) as server:
        options = ModelOptions(base_url=server.base_url, cache_path=tmp_path / "c.sqlite", retry=FAST)
        for attempt in range(2):
            model = for_run(build_model("openai:m", options), CallRecorder())
            try:
                if attempt == 0:
                    with pytest.raises(IncompleteAnswerError):
                        await model.generate(req())
                else:
                    assert (await model.generate(req())).text == "An answer."
            finally:
                await model.aclose()
        assert server.requests == 4


@pytest.mark.localhost
@pytest.mark.parametrize("variant, field", [
    ("model_not_string", "model is not a string"), ("finish_reason_object", "finish_reason is not a string"),
    ("tokens_infinity", "Infinity"), ("lone_surrogate", "lone surrogate"), ("invalid_utf8", "not UTF-8"),
])
async def test_a_server_answer_with_wrong_types_is_a_model_error(variant: str, field: str) -> None:
    with fault_server(SERVED, rate=0.0, schedule=[variant, variant, variant]) as server:
        model = RetryingModel(OpenAICompatModel("m", base_url=server.base_url), FAST)
        try:
            with pytest.raises(ModelError, match=f"malformed response.*{field}.*gave up after 2 attempts"):
                await model.generate(req())
            response = await model.generate(req())  # one more bad body, then a good one: retried
            assert response.text == "An answer." and server.requests == 4
        finally:
            await model.aclose()


@pytest.mark.localhost
def test_a_run_against_a_server_of_wrong_types_fails_without_an_internal_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    with fault_server(SERVED, rate=1.0, faults=BAD_TYPES) as server:
        code = main(["simulate", "--case", str(CONSULT), "--model", "openai:m", "--base-url", server.base_url,
                     "--max-attempts", "2", "--retry-base-delay", "0", "--out", str(out)])
    err = capsys.readouterr().err
    traces = [read_trace(p) for p in out.glob("*/*.trace.json")]
    assert code == 1 and "internal error" not in err and len(traces) == 2
    assert all(t.status == "failed" and "malformed response" in (t.error or "") for t in traces)


@pytest.mark.localhost
@pytest.mark.parametrize("variant", ["no_usage", "partial_usage"])
async def test_missing_usage_counts_are_estimated_never_zero(variant: str) -> None:
    with fault_server(SERVED, rate=0.0, schedule=[variant]) as server:
        model = OpenAICompatModel("m", base_url=server.base_url)
        try:
            usage = (await model.generate(req("Name one organ."))).usage
        finally:
            await model.aclose()
    assert usage.estimated and usage.input_tokens > 0 and usage.output_tokens > 0 and usage.calls == 1


@pytest.mark.localhost
def test_truncated_faults_are_asked_again_with_more_room_and_never_reach_a_result(tmp_path: Path) -> None:
    """The fault server's truncation (half the answer, finish_reason length) on half the calls."""
    from test_faults import SCRIPT

    out = tmp_path / "runs"
    with fault_server(SCRIPT, rate=0.5, seed=3, faults=("truncated",)) as server:
        code = main(["simulate", "--case", str(CONSULT), "--model", "openai:fault-panel", "--base-url",
                     server.base_url, "--schema-dialect", "none", "--out", str(out)])
    traces = [read_trace(p) for p in sorted(out.glob("*/*.trace.json"))]
    assert server.injected["truncated"] > 3 and code in (0, 1)
    for trace in traces:
        cut = [c for c in trace.calls if c.finish_reason == "length"]
        assert cut and all(c.error and "cut off" in c.error and c.parsed is None for c in cut)
        for i, call in enumerate(trace.calls):  # the next attempt of a cut-off call has twice its room
            tag = (call.stage, call.role, call.round)
            later = [c for c in trace.calls[i + 1:] if (c.stage, c.role, c.round) == tag]
            if call.finish_reason == "length" and later:
                assert later[0].settings.max_tokens == 2 * call.settings.max_tokens
        assert isinstance(trace, Trace)
        if trace.status == "completed":  # every opinion is a whole answer, never half of one
            assert all(o.text == "My opinion: A is most likely." or o.sections for o in trace.opinions)
        else:
            assert trace.failed_stage and "IncompleteAnswerError" in (trace.error or "")


def test_the_body_reader_refuses_every_wrong_type() -> None:
    def body(**fields: Any) -> bytes:
        choice = {"message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}
        return json.dumps({"model": "m", "choices": [choice], **fields}).encode()

    assert parse_completion(body()).text == "x" and parse_completion(body()).prompt_tokens is None
    for bad, message in [
        (body(usage={"prompt_tokens": -1}), "negative"), (body(usage={"prompt_tokens": 1.5}), "whole number"),
        (body(usage={"prompt_tokens": True}), "not a number"), (body(usage={"prompt_tokens": "7"}), "not a number"),
        (b'{"model": "m", "usage": {"prompt_tokens": 1e999}, "choices": []}', "choices"),
        (body(usage={"completion_tokens": 12345}).replace(b"12345", b"1e999"), "whole number"),
        (body(usage=[1]), "usage is not an object"),
        (b'{"usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}", "not readable JSON"),
        (b"[" * 100_000, "not readable JSON"), (body(choices="x"), "choices"), (b"[]", "the body is not an object"),
        (body(choices=[{"message": {"content": ["a"]}}]), "content is not a string"),
        (body(choices=[{"message": "hi"}]), "message is not an object"), (b"NaN", "NaN"),
    ]:
        with pytest.raises(MalformedCompletion, match=message):
            parse_completion(bad)


# --- the cache key holds everything that reaches the model -----------------------------------------


def test_two_gguf_files_of_one_name_are_two_models(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model.gguf").write_bytes(b"GGUF" + folder.encode())
    first, second = LlamaCppModel(tmp_path / "a" / "model.gguf"), LlamaCppModel(tmp_path / "b" / "model.gguf")
    assert first.model_id == second.model_id == "model"
    assert cache_key(first.model_id, first.endpoint, req()) != cache_key(second.model_id, second.endpoint, req())


def test_a_replaced_gguf_file_is_another_model(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF-one")
    before = LlamaCppModel(path).endpoint
    path.write_bytes(b"GGUF-second-version")
    assert LlamaCppModel(path).endpoint != before


def test_the_schema_dialect_is_part_of_the_key() -> None:
    keys = {cache_key("m", OpenAICompatModel("m", base_url="http://127.0.0.1:9/v1", dialect=d).endpoint,
                      req(schema=VOTE)) for d in ("json_schema", "json_object", "none")}
    assert len(keys) == 3


def test_the_schema_name_is_part_of_the_key() -> None:
    renamed = OutputSchema.from_json_schema({"type": "object", "required": ["vote"]}, name="ballot")
    assert cache_key("m", "e", req(schema=VOTE)) != cache_key("m", "e", req(schema=renamed))


async def test_an_image_is_keyed_by_its_bytes_not_its_path(tmp_path: Path) -> None:
    slide = tmp_path / "slide.png"
    slide.write_bytes(b"\x89PNG first slide")
    backend = scripted(ScriptRule(responses=["reads the first", "reads the second"]), images=True)
    cached = CachedModel(backend, tmp_path / "c.sqlite")
    try:
        assert (await cached.generate(req(images=(str(slide),)))).text == "reads the first"
        assert (await cached.generate(req(images=(str(slide),)))).cached
        slide.write_bytes(b"\x89PNG other slide")  # same path, same size class, new content
        assert (await cached.generate(req(images=(str(slide),)))).text == "reads the second"
    finally:
        await cached.aclose()


# --- the embedded model's repetition stop ------------------------------------------------------------------


def test_the_repetition_stop_ends_a_loop_and_keeps_one_copy() -> None:
    prompt, loop = [7, 7, 7], list(range(100, 160))  # a 60-token paragraph, repeated
    stop = RepetitionStop(eos_token=0, window=8)
    generated: list[int] = []
    for token in [1, 2, 3, *loop, *loop]:
        scores = np.zeros(200, dtype=np.float32)
        stop(np.array(prompt + generated, dtype=np.intc), scores)
        if stop.kept is not None:
            assert scores.argmax() == 0 and np.isneginf(scores[1:]).all()  # only end-of-generation is left
            break
        generated.append(token)
    assert stop.kept == [1, 2, 3, *loop]
    fresh = RepetitionStop(eos_token=0, window=8)
    for n in range(80):  # prose without a repeated 8-token stretch is left alone
        fresh(np.array(prompt + list(range(10, 10 + n)), dtype=np.intc), np.zeros(200, dtype=np.float32))
    assert fresh.kept is None


def test_a_stopped_answer_ends_at_its_last_sentence() -> None:
    assert _trim_to_sentence("First point. Second point. The diagnosis of sinus") == "First point. Second point."
    assert _trim_to_sentence("One long sentence without an end in the second half. x") == \
        "One long sentence without an end in the second half."
    assert _trim_to_sentence("Short. A much longer tail that runs on and on without a stop") == \
        "Short. A much longer tail that runs on and on without a stop"


#: The free-form opinion prompt of the runs before the length budget (its file went with the retired lengths: legacy).
LOOPED_OPINION_PROMPT = (
    "Before the panel meets, each specialist writes an independent opinion of the case from their own specialty's "
    "point of view, without seeing any other specialist's opinion. Cover the relevant clinical data, the syndromes "
    "you recognise, your differential diagnosis, the diagnostic strategy, the management strategy, and end with "
    "your final conclusion. Write in plain prose.\n\nYou are the {role_label} on this panel ({role_kind} role; "
    "chosen because: {justification}). Write your opinion now.")


@pytest.mark.embedded
async def test_the_embedded_model_stops_a_looping_opinion() -> None:
    """The demo's supporting-role opinion loops a paragraph to the token cap without the stop."""
    from consilium.agents.prompting import load_prompt
    from consilium.cases import load_case

    # The opinion prompt as the demo had it when it looped (before the length budget), byte for byte as the
    # prompt loader read it, laid out as a case prompt is (agents/prompting.py case_messages).
    task = LOOPED_OPINION_PROMPT.format(role_label="...", role_kind="supporting",
                                        justification="Another specialty that needs to be considered in this case")
    messages = (Message(role="system", content=load_prompt("preamble")),
                Message(role="user", content=f"CASE\n{load_case(CONSULT).render()}\n\nTASK\n{task}"))
    recorder = CallRecorder()
    model = for_run(build_model("embedded", ModelOptions(cache=False)), recorder)
    try:
        response = await model.generate(ModelRequest(messages=messages, settings=GenerationSettings(max_tokens=2048),
                                                     tag=CallTag(stage="opinion", role="x")))
    finally:
        await model.aclose()
    [call] = recorder.calls
    assert call.finish_reason == "repetition" and call.settings.max_tokens == 1024 and call.stage_limit == 1024
    assert response.text.strip() and call.usage.output_tokens < 1024
