"""Agents mode lets the moderator pass the floor and closes at the turn limit.

Speakers take the floor more than once, and a turn may answer the previous turn or disagree
(opentumorboard.txt App. B.2, L166; its example has a surgeon's turn answered directly by the medical
oncologist). Runs go through the CLI with the scripted backend; the assertions read the trace.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from consilium.cases import load_case
from consilium.cli import main
from consilium.graphs.base import RunModels
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.run import run_board
from consilium.graphs.board.trace import BoardTrace
from consilium.graphs.registry import read_trace
from consilium.models import ModelRequest
from consilium.models.backends.scripted import ScriptedModel

CASES = Path(__file__).resolve().parents[2] / "examples" / "cases"
CASE = CASES / "tumor-board-nsclc.yaml"
ASSIGNMENT = {"primary": {"label": "Medical oncologist", "justification": "systemic therapy"},
              "supporting": [{"label": "Thoracic surgeon", "justification": "resectability"},
                             {"label": "Radiologist", "justification": "staging"}]}
CONCLUSION = {"conclusion": "The board recommends staging, then lobectomy. Adjuvant osimertinib follows surgery."}


def moderator(round_: int, answer: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"stage": "board_turn", "role": "moderator", "round": round_, **extra}
    if answer is not None:
        rule["json"] = answer
    return rule


def specialist(label: str, reply: str, *, contains: str = "") -> dict[str, Any]:
    return {"stage": "board_turn", "contains_all": [f"You are the {label}, and you have the floor.", contains],
            "response": reply}


def script(tmp_path: Path, rules: list[dict[str, Any]]) -> str:
    path = tmp_path / "board.json"
    path.write_text(json.dumps({"model": "scripted-board", "rules": [
        {"stage": "role_assignment", "json": ASSIGNMENT}, *rules,
        {"stage": "conclusion", "json": CONCLUSION}]}))
    return f"scripted:{path}"


def board(tmp_path: Path, model: str, *extra: str, expect: int = 0) -> tuple[BoardTrace, Path]:
    out = tmp_path / "runs"
    assert main(["board", "--case", str(CASE), "--model", model, "--out", str(out), *extra]) == expect
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace)
    return trace, path


def replays(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["replay", str(path)]) == 0
    assert ": identical (" in capsys.readouterr().out


PASSING: list[dict[str, Any]] = [
    moderator(1, {"action": "ask", "speaker": "Radiologist", "message": "Radiology, the staging?"}),
    specialist("Radiologist", "cT2aN1 on PET-CT; the mediastinum looks clear."),
    # A → B: the surgeon replies directly to the radiologist, without a moderator turn between.
    moderator(3, {"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 2,
                  "message": "whether PET alone clears the mediastinum"}),
    specialist("Thoracic surgeon", "I would not operate on PET alone; EBUS first.",
               contains="reply directly to the Radiologist (turn 2); the point to take up: whether PET alone"),
    # B → A: and the radiologist answers the surgeon.
    moderator(4, {"action": "pass", "speaker": "Radiologist", "responds_to": 3, "message": "EBUS before surgery"}),
    specialist("Radiologist", "Agreed, and a brain MRI too.",
               contains="reply directly to the Thoracic surgeon (turn 3)"),
    moderator(5, {"action": "close", "speaker": "Radiologist", "message": "Staging first, then surgery. Thank you."}),
]


def test_the_moderator_passes_the_floor_and_specialists_answer_each_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, path = board(tmp_path, script(tmp_path, PASSING))
    assert trace.status == "completed" and trace.stop_reason == "moderator_closed", trace.error
    assert [(t.number, t.role, t.floor, t.responds_to) for t in trace.turns] == [
        (1, "Moderator", None, None),
        (2, "Radiologist", "asked", None),
        (3, "Thoracic surgeon", "passed", 2),  # consecutive specialist turns: 2, 3, 4
        (4, "Radiologist", "passed", 3),
        (5, "Moderator", None, None),
    ]
    assert trace.turns[0].addressed_to == "Radiologist" and trace.config["discussion"] == "open"
    assert trace.validation is not None and trace.validation.exact == 1
    # The trace file holds the new fields as plain JSON; replay comes out identical.
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == "1.9" and raw["config"]["floor_schema"] == "union"
    assert raw["turns"][2]["floor"] == "passed" and raw["turns"][2]["responds_to"] == 2
    replays(path, capsys)


def test_a_moderator_that_never_closes_is_closed_at_the_turn_limit(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    rules: list[dict[str, Any]] = [
        # It only closes when its schema leaves nothing else (must_close): the last turn is its closing.
        {"stage": "board_turn", "role": "moderator", "contains": "Time is up",
         "json": {"action": "close", "speaker": "Radiologist", "message": "Time is up: staging first. Thank you."}},
        {"stage": "board_turn", "role": "moderator",
         "json": {"action": "ask", "speaker": "Radiologist", "message": "Radiology, anything to add?"}},
        {"stage": "board_turn", "response": "I would add a brain MRI."},
    ]
    trace, path = board(tmp_path, script(tmp_path, rules), "--max-turns", "5")
    assert trace.stop_reason == "turn_limit" and trace.status == "completed"
    assert [t.role for t in trace.turns] == ["Moderator", "Radiologist", "Moderator", "Radiologist", "Moderator"]
    assert trace.turns[-1].text == "Time is up: staging first. Thank you."
    closing = [c for c in trace.calls if c.role == "moderator" and c.round == 5]
    assert len(closing) == 1 and "Time is up: close the meeting" in closing[0].messages[-1].content
    replays(path, capsys)


def test_an_even_turn_limit_still_ends_with_the_moderators_closing(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """With two turns left a question and its answer would take both, so the moderator is offered only a
    pass or the close; a moderator that asks whenever it may then passes, and closes on the last turn."""
    rules: list[dict[str, Any]] = [
        {"stage": "board_turn", "role": "moderator", "contains": "Time is up",
         "json": {"action": "close", "speaker": "Radiologist", "message": "Time is up. Thank you."}},
        moderator(1, {"action": "ask", "speaker": "Radiologist", "message": "Radiology, the staging?"}),
        {"stage": "board_turn", "role": "moderator", "contains": 'give the floor to a specialist with a question',
         "json": {"action": "ask", "speaker": "Radiologist", "message": "Radiology, anything to add?"}},
        {"stage": "board_turn", "role": "moderator",
         "json": {"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 4, "message": "Resectable?"}},
        {"stage": "board_turn", "response": "I would add a brain MRI."},
    ]
    trace, path = board(tmp_path, script(tmp_path, rules), "--max-turns", "6")
    assert trace.stop_reason == "turn_limit" and trace.status == "completed"
    assert [t.role for t in trace.turns] == ["Moderator", "Radiologist", "Moderator", "Radiologist",
                                             "Thoracic surgeon", "Moderator"]
    assert trace.turns[4].floor == "passed" and trace.turns[4].responds_to == 4
    assert trace.turns[-1].text == "Time is up. Thank you."
    [two_left] = [c for c in trace.calls if c.role == "moderator" and c.round == 5]
    assert '(action "ask"' not in two_left.messages[-1].content
    replays(path, capsys)


@pytest.mark.parametrize("bad, error", [
    ({"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 9, "message": "x"},
     "responds_to: turn 9 does not exist (the meeting has turns 1–2)"),
    ({"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 1, "message": "x"},
     "responds_to: turn 1 is the Moderator's"),
    ({"action": "pass", "speaker": "Radiologist", "responds_to": 2, "message": "x"},
     "responds_to: turn 2 is the Radiologist's own"),
    ({"action": "pass", "speaker": "Thoracic surgeon", "message": "x"}, 'a "pass" must name the turn'),
    ({"action": "pass", "speaker": "Astrologer", "responds_to": 2, "message": "x"},
     "speaker: 'Astrologer' is not one of"),
])
def test_invalid_floor_passing_goes_back_to_the_moderator(tmp_path: Path, bad: dict[str, Any], error: str) -> None:
    good = PASSING[2]["json"]
    rules = [PASSING[0], PASSING[1], moderator(3, responses=[bad, good]), *PASSING[3:]]
    trace, _ = board(tmp_path, script(tmp_path, rules))
    assert trace.status == "completed" and [t.responds_to for t in trace.turns][:3] == [None, None, 2]
    [rejected] = [c for c in trace.calls if c.role == "moderator" and c.round == 3 and c.error]
    assert error in (rejected.error or "")


def test_an_invalid_floor_pass_that_stays_invalid_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    bad = {"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 7, "message": "x"}
    trace, _ = board(tmp_path, script(tmp_path, [PASSING[0], PASSING[1], moderator(3, bad)]), expect=1)
    assert trace.status == "failed" and trace.failed_stage == "board_turn"
    assert "responds_to: turn 7 does not exist" in (trace.error or "")


# The alternating protocol and the flat open-floor schema no longer run: their traces (tests/fixtures/v1.0, v1.5)
# read, view and judge, and their replay, a flag or config asking for them and a cohort resumed under them are
# refused in one line (tests/traces/test_old_records.py).


# The rules of the moderator's answer are in its JSON schema, so a backend that enforces schemas (a llama.cpp
# grammar, a server's json_schema) cannot break them. A moderator held to its schema, as a grammar holds a
# model: of the answers planned for a turn, it gives the first its request's schema admits. Its first choice
# for each pass names no turn, what the embedded model did under a grammar that allowed it.
MODERATOR_PLAN: dict[int, list[dict[str, Any]]] = {
    1: [{"action": "ask", "speaker": "Radiologist", "message": "Radiology, the staging?"}],
    3: [{"action": "pass", "speaker": "Thoracic surgeon", "message": "whether PET clears the mediastinum"},
        {"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 2, "message": "PET and the mediastinum"}],
    4: [{"action": "pass", "speaker": "Medical oncologist", "message": "EBUS before surgery"},
        {"action": "pass", "speaker": "Medical oncologist", "responds_to": 3, "message": "EBUS before surgery"}],
    5: [{"action": "close", "speaker": "Radiologist", "message": "Staging first, then surgery. Thank you."}],
}
SPEAKER_PLAN = {2: "cT2aN1 on PET-CT.", 3: "EBUS first.", 4: "Agreed, and osimertinib after surgery."}
# At turn 5 the meeting so far is: 1 the Moderator's, 2 the Radiologist's, 3 the Thoracic surgeon's (a reply
# to 2), 4 the Medical oncologist's (a reply to 3). Each speaker may reply to an earlier specialist turn but its
# own: the Radiologist to 3 or 4, the Thoracic surgeon to 2 or 4, the Medical oncologist to 2 or 3.
AT_TURN_5: list[tuple[dict[str, Any], bool]] = [
    ({"action": "pass", "speaker": "Medical oncologist", "responds_to": 3, "message": "x"}, True),
    ({"action": "pass", "speaker": "Medical oncologist", "responds_to": 2, "message": "x"}, True),
    ({"action": "pass", "speaker": "Radiologist", "responds_to": 4, "message": "x"}, True),
    ({"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 4, "message": "x"}, True),
    ({"action": "pass", "speaker": "Medical oncologist", "message": "x"}, False),  # a pass names no turn
    ({"action": "pass", "speaker": "Medical oncologist", "responds_to": None, "message": "x"}, False),
    ({"action": "pass", "speaker": "Medical oncologist", "responds_to": 4, "message": "x"}, False),  # its own
    ({"action": "pass", "speaker": "Radiologist", "responds_to": 2, "message": "x"}, False),  # its own
    ({"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 1, "message": "x"}, False),  # Moderator's
    ({"action": "pass", "speaker": "Thoracic surgeon", "responds_to": 5, "message": "x"}, False),  # not yet said
    ({"action": "ask", "speaker": "Radiologist", "message": "x"}, True),
    ({"action": "ask", "speaker": "Radiologist", "responds_to": None, "message": "x"}, True),
    ({"action": "ask", "speaker": "Thoracic surgeon", "responds_to": 2, "message": "x"}, True),
    ({"action": "ask", "speaker": "Radiologist", "responds_to": 2, "message": "x"}, False),  # its own
    ({"action": "ask", "speaker": "Medical oncologist", "responds_to": 1, "message": "x"}, False),
    ({"action": "ask", "speaker": "Astrologer", "message": "x"}, False),
    ({"action": "ask", "speaker": "Radiologist", "message": ""}, False),
    ({"action": "ask", "speaker": "Radiologist", "message": "x", "urgency": "high"}, False),
    ({"action": "close", "speaker": "Radiologist", "message": "Thank you."}, True),
    ({"action": "adjourn", "speaker": "Radiologist", "message": "Thank you."}, False),
]


def schema_held_board(schemas: dict[int, dict[str, Any]]) -> ScriptedModel:
    """The meeting above, its moderator held to each request's JSON schema; every moderator schema is kept
    by turn number."""

    def respond(request: ModelRequest) -> Any:
        tag, turn = request.tag, request.tag.round or 0
        if tag.stage == "role_assignment":
            return ASSIGNMENT
        if tag.stage == "conclusion":
            return CONCLUSION
        if tag.role != "moderator":
            return SPEAKER_PLAN[turn]
        schemas[turn] = request.json_schema or {}
        admits = jsonschema.Draft202012Validator(schemas[turn]).is_valid
        return next((answer for answer in MODERATOR_PLAN[turn] if admits(answer)), MODERATOR_PLAN[turn][0])

    return ScriptedModel(responder=respond, model_id="schema-held-board")


@pytest.fixture(scope="module")
def held_meeting() -> tuple[BoardTrace, dict[int, dict[str, Any]]]:
    schemas: dict[int, dict[str, Any]] = {}
    model = schema_held_board(schemas)
    trace = asyncio.run(run_board(load_case(CASE), "agents", RunModels(panel=model, moderator=model),
                                  BoardConfig(), run_id="held"))
    return trace, schemas


def test_a_model_held_to_the_schema_cannot_pass_the_floor_without_naming_a_turn(
        held_meeting: tuple[BoardTrace, dict[int, dict[str, Any]]]) -> None:
    """Under a schema that let a pass leave out ``responds_to``, the embedded model did so until its repairs ran
    out and the meeting failed. With the rule in the schema, the pass names a turn at the first attempt."""
    trace, _ = held_meeting
    assert trace.status == "completed" and trace.stop_reason == "moderator_closed", trace.error
    assert [(t.number, t.role, t.floor, t.responds_to) for t in trace.turns] == [
        (1, "Moderator", None, None), (2, "Radiologist", "asked", None), (3, "Thoracic surgeon", "passed", 2),
        (4, "Medical oncologist", "passed", 3), (5, "Moderator", None, None)]
    assert [c.error for c in trace.calls if c.error] == [], "no answer went back for a repair"


def test_every_rule_of_the_moderators_answer_is_in_its_json_schema(
        held_meeting: tuple[BoardTrace, dict[int, dict[str, Any]]]) -> None:
    _, schemas = held_meeting
    validator = jsonschema.Draft202012Validator(schemas[5])
    assert [(answer, validator.is_valid(answer)) for answer, _ in AT_TURN_5] == AT_TURN_5
    # Each action's required fields are required by the schema itself: a pass names its turn; an ask need not
    # (the prompt lets its responds_to be null) and a close's speaker and turn are ignored.
    required = {(b["properties"]["action"]["const"], tuple(b["required"])) for b in schemas[5]["anyOf"]}
    assert required == {("ask", ("action", "speaker", "message")),
                        ("pass", ("action", "speaker", "responds_to", "message")),
                        ("close", ("action", "speaker", "message"))}
    # At turn 3 only the Radiologist's turn 2 can be answered: the Radiologist has no pass to take.
    passes = {b["properties"]["speaker"]["const"]: b["properties"]["responds_to"]["enum"]
              for b in schemas[3]["anyOf"] if b["properties"]["action"]["const"] == "pass"}
    assert passes == {"Thoracic surgeon": [2], "Medical oncologist": [2]}


def grammar_admits(schema: dict[str, Any]) -> Any:
    """Whether llama.cpp's grammar sampler, built from ``schema`` by the embedded backend's converter, lets a
    text through token by token and then lets it end. Only the embedded model's vocabulary is loaded."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from llama_cpp._internals import LlamaModel

    from consilium.models.backends.llama import embedded_model_path
    from consilium.models.backends.llama_grammar import json_grammar

    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    vocab = LlamaModel(path_model=str(embedded_model_path()), params=params, verbose=False)
    grammar = json_grammar(schema)

    def allowed(sampler: Any, token: int) -> bool:
        one = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 1.0, 0.0))
        candidates = llama_cpp.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return math.isfinite(one[0].logit)

    def admits(text: str) -> bool:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab.vocab, grammar._grammar.encode(), grammar._root.encode())
        assert sampler, "llama.cpp refused the grammar"
        try:
            for token in vocab.tokenize(text.encode(), add_bos=False, special=False):
                if not allowed(sampler, token):
                    return False
                llama_cpp.llama_sampler_accept(sampler, token)
            return allowed(sampler, vocab.token_eos())
        finally:
            llama_cpp.llama_sampler_free(sampler)

    return admits


def test_the_moderators_schema_becomes_a_grammar_that_holds_its_rules(
        held_meeting: tuple[BoardTrace, dict[int, dict[str, Any]]]) -> None:
    """The embedded backend turns the union into a llama.cpp grammar, which llama.cpp accepts and which lets
    through exactly the answers the schema admits (the same answers at turn 5, written as a model would)."""
    _, schemas = held_meeting
    admits = grammar_admits(schemas[5])
    assert [(answer, admits(in_grammar_order(answer))) for answer, _ in AT_TURN_5] == AT_TURN_5


def in_grammar_order(answer: dict[str, Any]) -> str:
    """The answer as JSON with its keys where a llama.cpp grammar puts them: a branch's required keys in the
    schema's order, then its optional ones (an ask's ``responds_to`` after the message)."""
    required = ["action", "speaker", "responds_to", "message"] if answer["action"] == "pass" else \
        ["action", "speaker", "message", "responds_to"]
    order = [*required, *sorted(set(answer) - set(required))]
    return json.dumps({key: answer[key] for key in order if key in answer})
