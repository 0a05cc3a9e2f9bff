"""The App. E.2 format checks on the cases they used to get wrong, the
overlength penalty of a repaired single-mode meeting, and the repetition penalty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consilium.cli import main
from consilium.graphs.board.repetition import (
    RUN_FREE,
    RUN_FULL,
    SHARE_FREE,
    SHARE_FULL,
    Repetition,
    measure_repetition,
    repetition_penalty,
)
from consilium.graphs.board.trace import BoardTrace
from consilium.graphs.board.transcript import split_sentences
from consilium.graphs.board.validate import validate_transcript
from consilium.graphs.registry import read_trace

CASE = Path(__file__).resolve().parents[2] / "examples" / "cases" / "tumor-board-nsclc.yaml"
VALID = (
    "<discussion>\n"
    "<turn 1> Moderator: A 64-year-old with a 4 cm right upper lobe mass. Radiology?\n"
    "<turn 2> Radiologist: One ipsilateral hilar node, no distant disease.\n"
    "<turn 3> Moderator: Surgery?\n"
    "<turn 4> Thoracic Surgeon: Resectable by lobectomy.\n"
    "</discussion>\n"
    "<conclusion>The board recommends lobectomy with nodal dissection. Adjuvant therapy depends on "
    "final pathology and EGFR status.</conclusion>"
)


def failed(text: str) -> list[str]:
    return [c.name for c in validate_transcript(text).failed]


def test_the_fixture_is_valid() -> None:
    assert failed(VALID) == []


# The turn-line and sentence rules (opentumorboard.txt App. E.2: "turn-line syntax", "a conclusion of two
# to four sentences", "no stray whitespace").
def test_two_turns_on_one_line_fail_the_turn_line_syntax() -> None:
    text = VALID.replace("no distant disease.\n<turn 3>", "no distant disease. <turn 3>").replace(
        "<turn 4>", "<turn 3>")
    report = validate_transcript(text)  # numbered 1, 2, 3, 3: the old check read turns 1, 2, 3 and passed
    # The official turn syntax does not look inside a turn's text, so officially the transcript is exact
    # (format rules "3"); the diagnostic still names the fault.
    assert "turn_line_syntax" in [c.name for c in report.failed] and report.exact == 1
    assert "two turns on one line" in report.failed[0].detail


def test_a_conclusion_written_as_a_turn_line_fails() -> None:
    in_block = VALID.replace("<conclusion>The board", "<conclusion><turn 5> Moderator: The board")
    assert failed(in_block) == ["conclusion_two_to_four_sentences"]
    as_turn = VALID.replace("</discussion>", "<turn 5> Conclusion: The board recommends lobectomy.\n</discussion>")
    report = validate_transcript(as_turn)
    assert [c.name for c in report.failed] == ["turn_line_syntax"]
    assert "the conclusion written as a turn" in report.failed[0].detail


@pytest.mark.parametrize("space", ["\t", "\u00a0", "\u2009", "\r", "\u200b"])
def test_tabs_and_unicode_spaces_are_stray_whitespace(space: str) -> None:
    inside = VALID.replace("Resectable by lobectomy", f"Resectable{space}by lobectomy")
    assert failed(inside) == ["no_stray_text"]
    after_colon = VALID.replace("Radiologist: One", f"Radiologist:{space}One")
    assert "no_stray_text" in failed(after_colon)
    in_conclusion = VALID.replace("depends on final", f"depends on{space}final")
    assert failed(in_conclusion) == ["no_stray_text"]


def test_an_abbreviation_does_not_end_a_sentence() -> None:
    assert split_sentences("Dr. Smith will operate next week. Adjuvant therapy follows.") == [
        "Dr. Smith will operate next week.", "Adjuvant therapy follows."]
    one = VALID.replace("The board recommends lobectomy with nodal dissection. Adjuvant therapy depends on "
                        "final pathology and EGFR status.", "Dr. Smith and Prof. Jones, e.g. the surgeons, "
                        "recommend lobectomy vs. SBRT.")
    report = validate_transcript(one)
    assert [c.name for c in report.failed] == ["conclusion_two_to_four_sentences"]
    assert report.failed[0].detail == "the conclusion has 1 sentence(s)"
    assert failed(VALID.replace("The board recommends", "Dr. Smith recommends")) == []


def test_a_lower_case_start_still_starts_a_sentence() -> None:
    assert split_sentences("The board recommends surgery. adjuvant therapy follows pathology.") == [
        "The board recommends surgery.", "adjuvant therapy follows pathology."]
    assert failed(VALID.replace(" Adjuvant therapy", " adjuvant therapy")) == []
    five = VALID.replace(" Adjuvant therapy depends", " then A. then B. then C. adjuvant therapy depends")
    assert failed(five) == ["conclusion_two_to_four_sentences"]


# The overlength penalty (App. E.2: "an overlength penalty that is 0 up to 6,144 response tokens"): the response is the
# transcript kept, not the sum over its repair attempts.
def test_a_repaired_single_meeting_is_penalised_on_its_final_transcript_only(tmp_path: Path) -> None:
    broken = "Just prose. " + "The board talks at length. " * 900  # about 5,000 tokens, no blocks
    script = tmp_path / "board.json"
    script.write_text(json.dumps({"model": "scripted-board", "rules": [
        {"stage": "board_turn", "responses": [broken, broken, VALID]}]}))
    out = tmp_path / "runs"
    assert main(["board", "--case", str(CASE), "--model", f"scripted:{script}", "--out", str(out),
                 "--mode", "single"]) == 0
    [path] = list(out.glob("*/*.trace.json"))
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace) and len(trace.calls) == 3
    assert sum(c.usage.output_tokens for c in trace.calls) > 8192 >= 6144 >= trace.calls[-1].usage.output_tokens
    assert trace.validation is not None and trace.validation.exact == 1
    assert trace.validation.overlength_penalty == 0.0 and trace.validation.score == 1.0


def _meeting(texts: list[str], roles: tuple[str, str] = ("Moderator", "Radiologist")) -> str:
    lines = [f"<turn {n}> {roles[(n - 1) % 2]}: {text}" for n, text in enumerate(texts, 1)]
    return ("<discussion>\n" + "\n".join(lines) + "\n</discussion>\n<conclusion>The board recommends "
            "lobectomy. Adjuvant therapy depends on pathology.</conclusion>")


# The repetition penalty (App. E.2: "minus a repetition penalty that rises linearly with the longest repeated
# run and the repeated n-gram fraction"). From format rules "3" the report's penalty is the official one
# (consilium/otb/penalties.py: tokens incl. markup; the most frequent 4-gram's share of the tail, penalised from
# .15 to .50 once it occurs 12 times); rules "2"'s own measures (consilium/graphs/board/repetition.py) are
# tested below on their own.
def test_fifty_identical_turns_are_penalised_by_their_repeated_4gram_share() -> None:
    report = validate_transcript(_meeting(["We should proceed with surgery after restaging."] * 50))
    # Tokens: "discussion", 50 lines of 10 ("turn", N, the role, 7 words), "discussion", then the conclusion's 11
    # ("conclusion", 9 words, "conclusion"): 513. "we should proceed with" occurs 50 times: share 200/513.
    # No block of 1-8 tokens repeats back to back (each line has its own number): the run term is 0.
    share = 50 * 4 / 513
    assert report.exact == 1 and report.repetition is None and report.official is not None
    assert report.official["format_repetition_ngram_fraction"] == pytest.approx(share, abs=1e-12)
    assert report.repetition_penalty == pytest.approx((share - 0.15) / 0.35, abs=1e-12)
    assert report.score == pytest.approx(1 - (share - 0.15) / 0.35, abs=1e-12)


def test_a_varied_meeting_has_no_repetition_penalty() -> None:
    report = validate_transcript(VALID)
    assert report.repetition is None and report.official is not None
    assert report.official["format_repetition_detected"] == 0.0
    assert report.official["format_repetition_max_run"] == 1.0
    assert report.repetition_penalty == 0.0 and report.score == 1.0


def test_the_penalty_rises_linearly_with_the_run_and_the_share() -> None:
    # A two-turn loop repeated: turns 3.. each repeat a turn before them, run = len - 2.
    loop = ["Radiology, please review the staging scan.", "The scan shows one hilar node only."]
    for repeats in range(1, 6):
        measures = measure_repetition(loop * repeats)
        assert measures.longest_repeated_run == measures.repeated_turns == 2 * repeats - 2
    assert repetition_penalty(Repetition(repeated_ngram_share=0.0, repeated_turns=1, longest_repeated_run=RUN_FREE)) \
        == 0.0
    half_run = (RUN_FREE + RUN_FULL) / 2
    assert repetition_penalty(Repetition(repeated_ngram_share=0.0, repeated_turns=3,
                                         longest_repeated_run=int(half_run))) == pytest.approx(0.25)
    assert repetition_penalty(Repetition(repeated_ngram_share=(SHARE_FREE + SHARE_FULL) / 2, repeated_turns=0,
                                         longest_repeated_run=0)) == pytest.approx(0.25)
    assert repetition_penalty(Repetition(repeated_ngram_share=1.0, repeated_turns=9,
                                         longest_repeated_run=9)) == 1.0


def test_penalties_add_and_the_score_is_floored_at_minus_one() -> None:
    # A leading space fails the envelope and the outer-whitespace check: dense .75, exact 0, base .1875.
    # Tokens: 1 + 20·10 + 1 + 11 = 213; "same words every time" 20 times: share 80/213 (official rules "3").
    report = validate_transcript(" " + _meeting(["Same words every time, again and again."] * 20),
                                 response_tokens=8192)
    assert report.repetition_penalty == pytest.approx((80 / 213 - 0.15) / 0.35, abs=1e-12)
    assert report.overlength_penalty == 1.0 and 0.1875 - report.repetition_penalty - 1.0 < -1.0
    assert report.score == -1.0 and report.failure_reason == 0


def test_a_trace_written_before_the_repetition_fields_still_reads() -> None:
    fixture = Path(__file__).parents[1] / "fixtures" / "v1.0" / "tumor-board-nsclc.board-agents.trace.json"
    trace = read_trace(fixture)
    assert isinstance(trace, BoardTrace) and trace.validation is not None
    assert trace.validation.repetition is None and trace.validation.repetition_penalty == 0.0
