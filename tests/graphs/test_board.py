"""Board and Specialist Turn runs end to end with the scripted backend; assertions on the traces."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from consilium.cases import load_case
from consilium.cli import main
from consilium.graphs.base import RunModels
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.run import run_board
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.graphs.registry import read_trace
from consilium.models import ModelRequest
from consilium.models.backends.scripted import ScriptedModel

CASES = Path(__file__).resolve().parents[2] / "examples" / "cases"
CASE = CASES / "tumor-board-nsclc.yaml"
ASSIGNMENT = {"primary": {"label": "Medical oncologist", "justification": "systemic therapy"},
              "supporting": [{"label": "Thoracic surgeon", "justification": "resectability"},
                             {"label": "Radiologist", "justification": "staging"}]}
CONCLUSION = {"conclusion": "The board recommends neoadjuvant therapy and lobectomy. Restaging decides the rest."}
VALID_TRANSCRIPT = ("<discussion>\n<turn 1> Moderator: Radiology, the staging?\n<turn 2> Radiologist: cT2bN1.\n"
                    "<turn 3> Moderator: Surgery?\n<turn 4> Thoracic Surgeon: Resectable.\n</discussion>\n"
                    "<conclusion>The board recommends surgery. Adjuvant therapy follows pathology.</conclusion>")


def offered(schema: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The actions and speakers a moderator's schema offers: the alternating protocol's enums, or the open
    floor's union of branches (the speakers in the panel's order, as the close branch lists them)."""
    if "anyOf" not in schema:
        return schema["properties"]["action"]["enum"], schema["properties"]["speaker"]["enum"]
    branches = [b["properties"] for b in schema["anyOf"]]
    actions = list(dict.fromkeys(b["action"]["const"] for b in branches))
    listed = [b["speaker"]["enum"] for b in branches if "enum" in b["speaker"]]
    labels = listed[0] if listed else list(dict.fromkeys(b["speaker"]["const"] for b in branches))
    return actions, labels


def rotating_board(*, closes: bool) -> ScriptedModel:
    """Moderator asks the specialists in turn and closes as soon as its schema lets it (if ``closes``)."""
    asked = {"n": 0}

    def respond(request: ModelRequest) -> Any:
        tag = request.tag
        if tag.stage == "role_assignment":
            return ASSIGNMENT
        if tag.stage == "conclusion":
            return CONCLUSION
        if tag.stage == "board_turn" and tag.role == "moderator":
            actions, labels = offered(request.json_schema or {})
            if "close" in actions and (closes or actions == ["close"]):  # at the turn limit it must close
                return {"action": "close", "speaker": labels[0], "message": "We have a plan; thank you."}
            speaker = labels[asked["n"] % len(labels)]
            asked["n"] += 1
            if "ask" not in actions:  # two turns left: a direct reply to the last speaker, then the closing
                return {"action": "pass", "speaker": speaker, "responds_to": (tag.round or 1) - 1,
                        "message": f"{speaker}, your reply?"}
            return {"action": "ask", "speaker": speaker, "message": f"{speaker}, what do you think?"}
        if tag.stage == "board_turn":
            return f"As the {tag.role}, I have a view on turn {tag.round}."
        return None

    return ScriptedModel(responder=respond, model_id="rotating-board")


def run(model: ScriptedModel, **config: Any) -> BoardTrace:
    return asyncio.run(run_board(load_case(CASE), "agents", RunModels(panel=model, moderator=model),
                                 BoardConfig(**config), run_id="test"))


def test_moderator_goes_first_and_may_close_only_after_two_specialists() -> None:
    trace = run(rotating_board(closes=True))
    assert trace.status == "completed" and trace.stop_reason == "moderator_closed"
    assert [t.role for t in trace.turns] == ["Moderator", "Medical oncologist", "Moderator", "Thoracic surgeon",
                                             "Moderator"]
    assert [t.number for t in trace.turns] == [1, 2, 3, 4, 5]
    assert trace.turns[0].addressed_to == "Medical oncologist"
    assert trace.validation is not None and trace.validation.exact == 1
    assert trace.conclusion == CONCLUSION["conclusion"]
    assert trace.transcript.startswith("<discussion>\n<turn 1> Moderator: Medical oncologist, what do you think?")
    stages = trace.usage.by_stage
    assert set(stages) == {"role_assignment", "board_turn", "conclusion"} and stages["board_turn"].calls == 5


# With one turn left the moderator must close: 5 turns end with its closing turn.
@pytest.mark.parametrize("max_turns, expected", [(6, 6), (5, 5), (2, 2)])
def test_turn_limit_closes_the_meeting(max_turns: int, expected: int) -> None:
    trace = run(rotating_board(closes=False), max_turns=max_turns)
    assert trace.stop_reason == "turn_limit" and len(trace.turns) == expected
    assert trace.turns[0].role == "Moderator" and trace.conclusion


def test_specialists_take_the_floor_more_than_once() -> None:
    trace = run(rotating_board(closes=False), max_turns=12)
    speakers = [t.role for t in trace.turns if t.role != "Moderator"]
    assert len(speakers) == 6 and all(speakers.count(label) == 2 for label in set(speakers))
    # Each specialist sees the transcript so far, never a later turn.
    specialist_calls = [c for c in trace.calls if c.stage == "board_turn" and c.role != "moderator"]
    last = specialist_calls[-1].messages[-1].content
    so_far = last.split("The meeting so far:")[1].split("The Moderator passes you the floor")[0]
    # the last specialist turn (11) is a direct reply the moderator passed, with two turns left
    assert "<turn 10>" in so_far and "<turn 11>" not in so_far and trace.turns[10].floor == "passed"


def test_each_meeting_call_extends_the_prefix_of_the_one_before() -> None:
    """Board preamble, case, meeting rules and transcript come before whoever speaks: each call repeats the
    previous call's prompt up to the end of the transcript it saw (prefix caching on a vLLM server)."""
    trace = run(rotating_board(closes=False), max_turns=8)
    assert all(c.messages[0] == trace.calls[0].messages[0] for c in trace.calls)  # the role assignment's too
    prompts = [c.messages[1].content for c in trace.calls if c.stage in ("board_turn", "conclusion")]
    for before, after in itertools.pairwise(prompts):
        seen = before.split("The meeting so far:\n")[1].split("\n\nYou are the ")[0]
        seen = "" if seen == "(nothing has been said yet)" else seen  # the opening call's placeholder
        assert after.startswith(before[:before.index("The meeting so far:\n")] + "The meeting so far:\n" + seen)


def write_script(tmp_path: Path, rules: list[dict[str, Any]], **extra: Any) -> str:
    path = tmp_path / "board.json"
    path.write_text(json.dumps({"model": "scripted-board", "rules": rules, **extra}))
    return f"scripted:{path}"


def board_cli(tmp_path: Path, model: str, *extra: str, case: Path = CASE, expect: int = 0) -> BoardTrace:
    out = tmp_path / "runs"
    assert main(["board", "--case", str(case), "--model", model, "--out", str(out), *extra]) == expect
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace)
    return trace


def replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = sorted((tmp_path / "runs").glob("*/*.trace.json"))
    capsys.readouterr()
    assert main(["replay", *map(str, paths)]) == 0
    assert capsys.readouterr().out.count(": identical (") == len(paths)


def test_single_mode_valid_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = board_cli(tmp_path, write_script(tmp_path, [{"stage": "board_turn", "response": VALID_TRANSCRIPT}]),
                      "--mode", "single")
    assert trace.stop_reason == "single_call" and trace.transcript == VALID_TRANSCRIPT
    assert [t.role for t in trace.turns] == ["Moderator", "Radiologist", "Moderator", "Thoracic Surgeon"]
    assert trace.validation is not None and trace.validation.exact == 1 and len(trace.calls) == 1
    assert trace.conclusion == "The board recommends surgery. Adjuvant therapy follows pathology."
    replays(tmp_path, capsys)


def test_single_mode_repairs_then_records_the_final_validation(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    broken = VALID_TRANSCRIPT.replace("<turn 3>", "<turn 4>")
    trace = board_cli(tmp_path, write_script(tmp_path, [{"stage": "board_turn",
                                                         "responses": [broken, VALID_TRANSCRIPT]}]),
                      "--mode", "single")
    assert len(trace.calls) == 2 and trace.validation is not None and trace.validation.exact == 1
    assert "consecutive_numbering" in (trace.calls[1].messages[-1].content)
    replays(tmp_path, capsys)


def test_single_mode_still_invalid_after_repairs_is_recorded(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    trace = board_cli(tmp_path, write_script(tmp_path, [{"stage": "board_turn", "response": "Just prose."}]),
                      "--mode", "single")
    assert trace.status == "completed" and len(trace.calls) == 3
    assert trace.validation is not None and trace.validation.exact == 0 and trace.transcript == "Just prose."
    assert any("still broke the format" in note for note in trace.notes)
    replays(tmp_path, capsys)


def test_specialist_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long_answer = {"answer": "One. Two. Three. Four."}
    short_answer = {"answer": "I would give osimertinib for three years. EGFR exon 19 deletion supports it."}
    model = write_script(tmp_path, [{"stage": "specialist_turn", "responses": [long_answer, short_answer]}])
    out = tmp_path / "runs"
    assert main(["turn", "--case", str(CASE), "--model", model, "--out", str(out), "--role", "Medical oncologist",
                 "--question", "Adjuvant therapy?"]) == 0
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, TurnTrace)
    assert trace.answer == short_answer["answer"] and trace.role_category == "medical_oncology"
    assert len(trace.calls) == 2 and "at most three sentences" in (trace.calls[0].error or "")
    assert set(trace.usage.by_stage) == {"specialist_turn"}
    replays(tmp_path, capsys)


def test_slide_images_go_to_image_models_and_are_noted_otherwise(tmp_path: Path) -> None:
    case = tmp_path / "case.yaml"
    (tmp_path / "ct.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    text = CASE.read_text().replace("slides:\n", "slides:\n  - caption: Staging CT, axial.\n    image: ct.png\n", 1)
    case.write_text(text)
    rules = [{"stage": "board_turn", "response": VALID_TRANSCRIPT}]
    seen = board_cli(tmp_path / "a", write_script(tmp_path, rules, images=True), "--mode", "single", case=case)
    assert seen.images_sent and seen.calls[0].messages[1].images == (str((tmp_path / "ct.png").resolve()),)
    assert "Staging CT, axial." in seen.calls[0].messages[1].content
    skipped = board_cli(tmp_path / "b", write_script(tmp_path, rules), "--mode", "single", case=case)
    assert not skipped.images_sent and skipped.calls[0].messages[1].images == ()
    assert skipped.notes == ["1 slide image(s) not sent: model scripted-board does not accept images; "
                             "the captions were sent"]


@pytest.mark.parametrize("argv, expected", [
    (["board", "--case", str(CASE), "--mode", "loud"], "invalid choice"),
    (["board", "--case", str(CASE), "--min-roles", "4", "--max-roles", "2"], "min_roles (4) exceeds max_roles (2)"),
    (["turn", "--case", str(CASE), "--role", "Astrologer", "--question", "?"], "'Astrologer' is not a specialty"),
    (["turn", "--case", str(CASE), "--question", "?"], "the following arguments are required: --role"),
])
def test_bad_board_input_is_one_line_and_exit_2(argv: list[str], expected: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--model", "scripted:none.json", "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1 and not (tmp_path / "runs").exists()


def test_slide_image_outside_the_case_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "cases" / "case.yaml"
    case.parent.mkdir()
    (tmp_path / "secret.png").write_bytes(b"x")
    case.write_text(CASE.read_text().replace("slides:\n", "slides:\n  - caption: x\n    image: ../secret.png\n", 1))
    assert main(["board", "--case", str(case), "--model", "scripted:none.json", "--out", str(tmp_path / "r")]) == 2
    assert "slides.0.image: '../secret.png' points outside the case's folder" in capsys.readouterr().err
