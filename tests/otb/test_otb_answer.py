"""The Specialist Turn answer as the official evaluation extracts it (consilium/otb/answer.py): the generation
step's JSON reading, then the judging step's lenient recovery, on responses of every shape; and a turn judged
in the authors' layout on that answer, not on consilium's own reading. Each expected value is worked out by hand
from the official rules (the docstring of consilium/otb/answer.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.otb_release import write_release
from support.scripts import Scripted

from consilium.cases import load_case
from consilium.cli import main
from consilium.otb.answer import Answer, answer_text, official_answer, parse_answer

# (raw response, the generation step's status, the answer found, the official path that found it)
SHAPES = [
    # exactly the requested object: parsed as it is
    ('{"answer": "Start FOLFOX."}', "parsed", "Start FOLFOX.", "parsed"),
    # a code fence: its inside parses (the second candidate), then the answer is stripped
    ('```json\n{"answer": " Resect the lesion. "}\n```', "parsed_after_cleanup", "Resect the lesion.", "parsed"),
    # a leading think block is dropped before parsing
    ('<think>weigh it</think>\n{"answer":"Refer to the trial."}', "parsed_after_cleanup", "Refer to the trial.",
     "parsed"),
    # prose around the object: the first-{-to-last-} span parses
    ('Sure. {"answer": "Proceed to surgery."} Hope this helps', "parsed_after_cleanup", "Proceed to surgery.",
     "parsed"),
    # an array around the object: the span from its first { to its last } is the object
    ('[{"answer": "Observe."}]', "parsed_after_cleanup", "Observe.", "parsed"),
    # a key too many fails the generation step; the judging step reads the object's answer anyway
    ('{"answer": "Watch and wait.", "confidence": 0.9}', "raw_fallback", "Watch and wait.", "raw_json"),
    # cut off before the closing quote: the wrapper is removed, only JSON escapes decoded
    ('{"answer": "Give radiotherapy to the \\"primary\\" site\\nthen review', "raw_fallback",
     'Give radiotherapy to the "primary" site\nthen review', "raw_json_wrapper_recovered"),
    # cut off after the closing quote: the quote goes too
    ('{"answer": "Biopsy first."', "raw_fallback", "Biopsy first.", "raw_json_wrapper_recovered"),
    # a unicode escape in a cut-off wrapper is decoded
    ('{"ANSWER" : "5\\u00a0mg daily', "raw_fallback", "5\u00a0mg daily", "raw_json_wrapper_recovered"),
    # plain prose: the answer is the text itself
    ("  The patient should start chemotherapy.\n", "raw_fallback", "The patient should start chemotherapy.",
     "raw_plain_text"),
    # a think block before prose is not dropped by the judging step: the prose keeps it
    ("<think>hmm</think> Plain prose answer.", "raw_fallback", "<think>hmm</think> Plain prose answer.",
     "raw_plain_text"),
    # JSON with no answer is a format failure, never prose
    ('{"diagnosis": "adenocarcinoma"}', "raw_fallback", None, "unrecoverable"),
    ('["radiotherapy"]', "raw_fallback", None, "unrecoverable"),
    ('{"answer": 3}', "raw_fallback", None, "unrecoverable"),
    # an empty answer, an empty string literal, nothing at all
    ('{"answer": "   "}', "parsed", None, "unrecoverable"),
    ('""', "raw_fallback", None, "unrecoverable"),
    ("", "raw_fallback", None, "unrecoverable"),
    ("  \n ", "raw_fallback", None, "unrecoverable"),
]


@pytest.mark.parametrize(("raw", "status", "text", "method"), SHAPES)
def test_every_response_shape_yields_the_official_answer_and_path(raw: str, status: str, text: str | None,
                                                                   method: str) -> None:
    assert parse_answer(raw)[1] == status
    assert official_answer(raw) == Answer(text, method)


def test_a_parsed_object_wins_over_the_raw_text() -> None:
    assert answer_text("not json at all", {"answer": " Given. "}) == Answer("Given.", "parsed")
    assert answer_text(None, None) == Answer(None, "unrecoverable")


def test_a_reasoning_final_run_takes_only_its_final_or_a_strict_object() -> None:
    # The extracted final response stands in for the raw text.
    assert answer_text("long thinking", reasoning_final=True, final_response='{"answer": "Stage first."}') == \
        Answer("Stage first.", "raw_json")
    # No boundary and no provider reasoning: only the exact one-key object counts.
    direct = {"reasoning_final": True, "final_extraction": "missing_explicit_final_boundary"}
    assert answer_text('{"answer": "A."}', **direct) == Answer("A.", "direct_final_json_no_reasoning_trace")
    assert answer_text('{"answer": "A.", "why": "b"}', **direct) == Answer(None, "unrecoverable_reasoning_final")
    assert answer_text("I think the answer is A.", **direct) == Answer(None, "unrecoverable_reasoning_final")
    # Provider reasoning with an empty final: nothing to score.
    assert answer_text("x", reasoning_final=True, reasoning="r", final_extraction="empty_provider_final_response") \
        == Answer(None, "unrecoverable_reasoning_final")


def test_otb_score_extracts_a_specialist_turn_record_as_the_official_scripts_wrote_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"qa_id": "q1", "raw_response": '{"answer": "Resect the lesion now', "parsed_output": None,
             "reference_answer": "Resect the lesion"},
            {"qa_id": "q2", "raw_response": "ignored", "parsed_output": {"answer": "Observe."}},
            {"qa_id": "q3", "raw_response": '{"plan": 1}', "parsed_output": None, "reference_answer": "Observe."}]
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["otb", "score", str(path)]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(o["answer"], o["answer_extraction"]) for o in out] == [
        ("Resect the lesion now", "raw_json_wrapper_recovered"), ("Observe.", "parsed"), ("", "unrecoverable")]
    # ROUGE-L of 4 candidate tokens against 3 reference tokens, LCS 3: P 3/4, R 1, F1 2·.75/1.75 = 6/7. No answer:
    # left out of the official mean (null here).
    assert out[0]["rouge_l"] == pytest.approx(6 / 7) and "rouge_l" not in out[1] and out[2]["rouge_l"] is None


RAW = '{"answer": "Start FOLFOX.\\n\\nReassess in eight weeks."}'
PROSE = ("Start FOLFOX now. Reassess in eight weeks. Consider the trial. Refer to the nurse navigator.")


@pytest.mark.parametrize(("raw", "candidate", "turn_rc"), [
    # consilium's own reading joins the answer onto one line; the official one keeps its paragraphs
    (RAW, "Start FOLFOX.\n\nReassess in eight weeks.", 0),
    # four sentences break consilium's own schema (the turn fails); the official reading judges the prose
    (PROSE, PROSE, 1),
])
def test_a_turn_is_judged_on_the_answer_the_official_extraction_finds(tmp_path: Path, raw: str, candidate: str,
                                                                      turn_rc: int) -> None:
    cases = tmp_path / "cases"
    assert main(["cases", "import", "opentumorboard", str(write_release(tmp_path / "data")), "--out",
                 str(cases)]) == 0
    case = load_case(cases / "sim_000001.yaml")
    assert case.reference is not None
    asked = case.reference.answers[0]
    panel = Scripted("m").rule("specialist_turn", response=raw).write(tmp_path / "p.json")
    assert main(["turn", "--case", str(cases / "sim_000001.yaml"), "--model", panel, "--role", str(asked.role),
                 "--question", asked.question, "--out", str(tmp_path / "runs")]) == turn_rc
    [trace] = list((tmp_path / "runs").rglob("*.trace.json"))
    judge = Scripted("j").judge({"clinical_equivalence_score": 3, "critical_error": False,
                                 "unsupported_claim": False, "rationale": "r"}).write(tmp_path / "j.json")
    assert main(["judge", str(trace), "--rubric", "otb-clinical-equivalence", "--judge-model", judge]) == 0
    [judged] = list((tmp_path / "runs").rglob("*otb-clinical-equivalence*.json"))
    record = json.loads(judged.read_text())
    [call] = record["calls"]
    user = call["messages"][1]["content"]
    assert f"<CANDIDATE_ANSWER>\n{candidate}\n</CANDIDATE_ANSWER>" in user
    assert record["items"][0]["score"] == 3
    assert record["response_format"] == {"answer_extraction": "parsed" if raw == RAW else "raw_plain_text"}


def test_a_turn_with_no_recoverable_answer_is_a_format_failure_never_judged(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    assert main(["cases", "import", "opentumorboard", str(write_release(tmp_path / "data")), "--out",
                 str(cases)]) == 0
    asked = load_case(cases / "sim_000001.yaml").reference.answers[0]  # type: ignore[union-attr]
    panel = Scripted("m").rule("specialist_turn", response='{"plan": "none"}').write(tmp_path / "p.json")
    main(["turn", "--case", str(cases / "sim_000001.yaml"), "--model", panel, "--role", str(asked.role),
          "--question", asked.question, "--out", str(tmp_path / "runs")])
    [trace] = list((tmp_path / "runs").rglob("*.trace.json"))
    judge = Scripted("j").judge({"clinical_equivalence_score": 5, "critical_error": False,
                                 "unsupported_claim": False, "rationale": "r"}).write(tmp_path / "j.json")
    main(["judge", str(trace), "--rubric", "otb-clinical-equivalence", "--judge-model", judge])
    [judged] = list((tmp_path / "runs").rglob("*otb-clinical-equivalence*.json"))
    record = json.loads(judged.read_text())
    assert record["calls"] == [] and all(i["not_evaluable"] for i in record["items"])
    assert "unrecoverable" in record["items"][0]["reason"]
    assert record["response_format"] == {"answer_extraction": "unrecoverable"}
