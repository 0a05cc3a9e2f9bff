"""Agents mode lets the moderator pass the floor and closes at the turn limit (issue 15, item 11).

Speakers take the floor more than once, and a turn may answer the previous turn or disagree
(opentumorboard.txt App. B.2, L166; its example has a surgeon's turn answered directly by the medical
oncologist). Runs go through the CLI with the scripted backend; the assertions read the trace.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main
from consilium.protocols.board.trace import BoardTrace
from consilium.protocols.registry import read_trace

CASES = Path(__file__).resolve().parents[1] / "examples" / "cases"
CASE = CASES / "tumor-board-nsclc.yaml"
FIXTURES = Path(__file__).parent / "fixtures" / "v1.0"
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
    assert raw["schema_version"] == "1.5"
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


def test_alternating_discussion_is_kept_for_older_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A trace written before schema 1.3 reads as the alternating protocol it ran, and replays identically.
    old = read_trace(FIXTURES / "tumor-board-nsclc.board-agents.trace.json")
    assert isinstance(old, BoardTrace) and old.config["discussion"] == "alternating"
    assert all(t.floor is None and t.responds_to is None for t in old.turns)
    shutil.copy(FIXTURES / "tumor-board-nsclc.board-agents.trace.json", tmp_path / "old.trace.json")
    replays(tmp_path / "old.trace.json", capsys)
    # --discussion alternating: no pass is offered, and the limit stops without a closing turn.
    rules: list[dict[str, Any]] = [{"stage": "board_turn", "role": "moderator",
                                    "json": {"action": "ask", "speaker": "Radiologist", "message": "Radiology?"}},
                                   {"stage": "board_turn", "response": "Staging first."}]
    trace, _ = board(tmp_path, script(tmp_path, rules), "--max-turns", "5", "--discussion", "alternating")
    assert trace.stop_reason == "turn_limit" and len(trace.turns) == 4
    assert all('"pass"' not in c.messages[-1].content for c in trace.calls if c.role == "moderator")
