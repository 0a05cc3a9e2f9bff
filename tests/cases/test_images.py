"""Slide images reach every model that reads them, each beside its caption; a text-only model gets the
captions and the trace says what it missed.

OpenTumorBoard gives each slide "as an image followed by a one-line description of it" (App. B.1, B.2,
L160/L166) and its clinical-equivalence judge "its image followed by its caption" (App. C.1, L170).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.localserver import scripted_server

from consilium.cli import main
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.graphs.registry import read_trace
from consilium.judges.record import Judgement
from consilium.models import ModelRequest
from consilium.models.types import Message
from consilium.models.wrappers.cache import cache_key
from consilium.models.wrappers.recording import request_hash

CASES = Path(__file__).resolve().parents[2] / "examples" / "cases"
CASE = CASES / "tumor-board-nsclc.yaml"
PNG = b"\x89PNG\r\n\x1a\n"
ASSIGNMENT = {"primary": {"label": "Medical oncologist", "justification": "systemic therapy"},
              "supporting": [{"label": "Radiologist", "justification": "staging"}]}
CHAIR_RULES: list[dict[str, Any]] = [
    {"stage": "role_assignment", "json": ASSIGNMENT},
    {"stage": "board_turn", "role": "moderator", "round": 1,
     "json": {"action": "ask", "speaker": "Radiologist", "message": "Radiology, the staging?"}},
    {"stage": "board_turn", "role": "moderator", "round": 3,
     "json": {"action": "ask", "speaker": "Medical oncologist", "message": "Oncology, the plan?"}},
    {"stage": "board_turn", "role": "moderator",
     "json": {"action": "close", "speaker": "Radiologist", "message": "Thank you."}},
    {"stage": "conclusion", "json": {"conclusion": "The board advises staging. Surgery follows."}},
]
PANEL_RULES: list[dict[str, Any]] = [{"stage": "board_turn", "response": "I agree with the plan."},
               {"stage": "specialist_turn", "json": {"answer": "Lobectomy after mediastinal staging."}}]


def slide_case(tmp_path: Path) -> tuple[Path, str, str]:
    """The NSCLC case with two image slides (around the captioned-only ones); their paths and the first's."""
    (tmp_path / "ct.png").write_bytes(PNG)
    (tmp_path / "pet.png").write_bytes(PNG + b"pet")
    text = CASE.read_text().replace(
        "slides:\n", "slides:\n  - caption: Staging CT, axial.\n    image: ct.png\n", 1).replace(
        "reference:\n", "  - caption: PET-CT, coronal.\n    image: pet.png\nreference:\n", 1)
    case = tmp_path / "case.yaml"
    case.write_text(text)
    return case, str((tmp_path / "ct.png").resolve()), str((tmp_path / "pet.png").resolve())


def scripted(tmp_path: Path, name: str, rules: list[dict[str, Any]], *, images: bool) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"model": name, "images": images, "rules": rules}))
    return f"scripted:{path}"


def user_message(call: Any) -> Message:
    message = call.messages[1]
    assert isinstance(message, Message) and message.role == "user"
    return message


@pytest.mark.parametrize("panel_sees, chair_sees", [(True, False), (False, True)])
def test_each_board_model_gets_the_slides_its_model_can_read(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              panel_sees: bool, chair_sees: bool) -> None:
    case, ct, pet = slide_case(tmp_path)
    panel = scripted(tmp_path, "scripted-panel", PANEL_RULES, images=panel_sees)
    chair = scripted(tmp_path, "scripted-chair", CHAIR_RULES, images=chair_sees)
    out = tmp_path / "runs"
    assert main(["board", "--case", str(case), "--model", panel, "--moderator-model", chair, "--out", str(out)]) == 0
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace) and trace.status == "completed"
    # Slide numbers as in the case text: the two image slides are the first and the last (6th).
    pairs = ((ct, pet), ("Slide 1: Staging CT, axial.", "Slide 6: PET-CT, coronal."))
    for call in trace.calls:
        message = user_message(call)
        sees = chair_sees if call.role == "moderator" else panel_sees
        if call.stage == "role_assignment":
            sees = False  # the panel is chosen from the case text (unchanged)
        assert (message.images, message.captions) == (pairs if sees else ((), ())), (call.stage, call.role)
        assert "Slide 6: PET-CT, coronal." in message.content  # every model reads the captions
    text_only = "scripted-chair" if panel_sees else "scripted-panel"
    assert trace.notes == [f"2 slide image(s) not sent: model {text_only} does not accept images; "
                           "the captions were sent"]
    assert trace.images_sent is panel_sees and trace.moderator_images_sent is chair_sees
    capsys.readouterr()
    assert main(["replay", str(path)]) == 0 and ": identical (" in capsys.readouterr().out


@pytest.mark.localhost
def test_the_openai_wire_sends_each_image_followed_by_its_caption(tmp_path: Path) -> None:
    case, _, _ = slide_case(tmp_path)
    with scripted_server([("ok", json.dumps({"answer": "Lobectomy after EBUS."}))]) as server:
        assert main(["turn", "--case", str(case), "--model", "openai:vision-model", "--base-url", server.base_url,
                     "--role", "Thoracic surgeon", "--question", "Operable?", "--out", str(tmp_path / "runs")]) == 0
    parts = server.bodies[0]["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url", "text"]
    assert parts[0]["text"].startswith("CASE\n") and parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert [parts[2]["text"], parts[4]["text"]] == ["Slide 1: Staging CT, axial.", "Slide 6: PET-CT, coronal."]
    [path] = list((tmp_path / "runs").glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, TurnTrace) and trace.images_sent and trace.answer == "Lobectomy after EBUS."


def test_captions_are_part_of_the_request_hash_and_cache_key_and_absent_ones_change_nothing(tmp_path: Path) -> None:
    image = tmp_path / "a.png"
    image.write_bytes(PNG)

    def request(*captions: str) -> ModelRequest:
        return ModelRequest(messages=(Message(role="user", content="x", images=(str(image),), captions=captions),))

    assert request_hash(request("Slide 1: CT.")) != request_hash(request("Slide 1: PET."))
    assert cache_key("m", "e", request("Slide 1: CT.")) != cache_key("m", "e", request("Slide 1: PET."))
    # A message without captions dumps (and so hashes) exactly as before captions existed: old traces replay.
    assert Message(role="user", content="x").model_dump() == {"role": "user", "content": "x", "images": ()}
    with pytest.raises(ValueError, match="1 captions for 2 images"):
        Message(role="user", content="x", images=("a", "b"), captions=("c",))


JUDGE_ANSWER = {"clinical_equivalence_score": 4, "critical_error": False, "unsupported_claim": False,
                "rationale": "Same plan."}


@pytest.mark.parametrize("vision", [True, False])
def test_the_clinical_equivalence_judge_gets_the_slides_it_can_read(tmp_path: Path, vision: bool) -> None:
    case, ct, pet = slide_case(tmp_path)
    out = tmp_path / "runs"
    assert main(["turn", "--case", str(case), "--model", scripted(tmp_path, "scripted-panel", PANEL_RULES,
                                                                  images=True),
                 "--role", "Thoracic surgeon", "--question", "Operable?", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    judge = scripted(tmp_path, "scripted-judge", [{"stage": "judge", "json": JUDGE_ANSWER}], images=vision)
    main(["judge", str(run_dir), "--rubric", "otb-clinical-equivalence", "--judge-model", judge,
          "--reference-answer", "Lobectomy once EBUS is negative."])
    [record] = run_dir.glob("*.judge.otb-clinical-equivalence.json")
    judgement = Judgement.model_validate_json(record.read_text())
    assert judgement.calls
    for call in judgement.calls:
        message = user_message(call)
        # The authors' layout (consilium/judges/otb_layout.py): the task is in the system message, the data alone
        # in the user message, the slides as the released <image> caption lines.
        assert len(call.messages) == 2 and "<task>" not in message.content
        assert message.content.rstrip().endswith("</CANDIDATE_ANSWER>")
        if vision:  # App. C.1: each slide as its image followed by its caption
            assert message.images == (ct, pet)
            assert message.captions == ("Slide 1: Staging CT, axial.", "Slide 6: PET-CT, coronal.")
        else:
            assert message.images == () and message.captions == ()
        assert "<SLIDE_DESCRIPTIONS>\n<image> Staging CT, axial.\n<image> Axial CT" in message.content
        assert "\n<image> PET-CT, coronal.\n</SLIDE_DESCRIPTIONS>" in message.content
    assert judgement.notes == ([] if vision else [
        "2 slide image(s) not sent: judge model scripted-judge does not accept images; the captions were sent"])


def test_the_conclusion_alignment_judge_reads_the_slide_descriptions_only(tmp_path: Path) -> None:
    # App. C.2 L176: "Use the case summary and slide descriptions", so even a vision judge gets captions only.
    case, _, _ = slide_case(tmp_path)
    out = tmp_path / "runs"
    assert main(["board", "--case", str(case), "--model", scripted(tmp_path, "p", PANEL_RULES, images=True),
                 "--moderator-model", scripted(tmp_path, "c", CHAIR_RULES, images=True), "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    judge = scripted(tmp_path, "scripted-judge", [{"stage": "judge", "json": {
        "conclusion_alignment": {"score": 4, "rationale": "Same plan."}}}], images=True)
    main(["judge", str(run_dir), "--rubric", "otb-conclusion-alignment", "--judge-model", judge])
    [record] = run_dir.glob("*.judge.otb-conclusion-alignment.json")
    judgement = Judgement.model_validate_json(record.read_text())
    assert judgement.calls and judgement.notes == []
    # The captions reach it in the released data's form (one "<image> caption" line each), in the official
    # <SLIDE_DESCRIPTIONS> section (consilium/judges/otb_layout.py).
    assert all(user_message(c).images == () and "<SLIDE_DESCRIPTIONS>\n<image> Staging CT, axial." in
               user_message(c).content for c in judgement.calls)


def test_a_text_only_scripted_model_refuses_image_parts(tmp_path: Path) -> None:
    # The guard that makes a silently sent image a failure in every test: a text-only model never takes one.
    import asyncio

    from consilium.errors import ModelError
    from consilium.models.backends.scripted import Script, ScriptedModel

    request = ModelRequest(messages=(Message(role="user", content="x", images=(str(tmp_path / "a.png"),)),))
    with pytest.raises(ModelError, match="does not accept images"):
        asyncio.run(ScriptedModel(Script(model="text-only", default="ok")).generate(request))
    assert asyncio.run(ScriptedModel(Script(images=True, default="ok")).generate(request)).text == "ok"


def test_a_board_cohort_sends_each_cases_slides_as_board_does(tmp_path: Path) -> None:
    """A cohort resolves each case's images against its own file's folder, as `board --case` does, so a
    vision panel in a cohort sees the slides too; the images are in the arm's trace config."""
    folder = tmp_path / "cases"
    folder.mkdir()
    _, ct, pet = slide_case(folder)
    panel = scripted(tmp_path, "scripted-panel", CHAIR_RULES + PANEL_RULES, images=True)
    out = tmp_path / "runs"
    assert main(["cohort", "--protocol", "board", "--modes", "agents", "--cases", str(folder), "--model", panel,
                 "--out", str(out)]) == 0
    [path] = list(out.rglob("*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace) and trace.status == "completed"
    assert trace.config["images"] == [ct, pet] and trace.images_sent
    turns = [c for c in trace.calls if c.stage == "board_turn" and c.role != "moderator"]
    assert turns and all(user_message(c).images == (ct, pet) for c in turns)
