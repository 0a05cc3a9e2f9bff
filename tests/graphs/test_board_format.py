"""The App. E.2 format checks, on a valid transcript and on one broken transcript per check."""

from __future__ import annotations

import pytest

from consilium.graphs.board.transcript import Transcript, Turn, parse_transcript
from consilium.graphs.board.validate import CHECKS, validate_transcript

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

BROKEN = {
    "blocks_in_order": VALID.replace("<discussion>\n", "").replace("</discussion>\n", ""),
    "turn_line_syntax": VALID.replace("<turn 2> Radiologist:", "Radiologist said"),
    "consecutive_numbering": VALID.replace("<turn 3>", "<turn 5>"),
    "at_least_two_roles": VALID.replace("Radiologist:", "Moderator:").replace("Thoracic Surgeon:", "Moderator:"),
    "moderator_first": VALID.replace("<turn 1> Moderator:", "<turn 1> Radiologist:"),
    "conclusion_two_to_four_sentences": VALID.replace(
        " Adjuvant therapy depends on final pathology and EGFR status.", ""),
    "no_stray_text": "Here is the meeting:\n" + VALID,
}


def test_a_valid_transcript_passes_every_check() -> None:
    report = validate_transcript(VALID)
    assert [c.name for c in report.checks] == list(CHECKS)
    assert (report.dense, report.exact, report.score) == (1.0, 1, 1.0)


# The numbers are the official format score's (format rules "3", consilium/otb/format_score.py), no longer
# passed/7 of the diagnostic checks: (dense, exact, score) by hand from the official weights blocks .25,
# envelope .1875, turn syntax .1875, numbering .1875, sentences .125, outer whitespace .0625.
OFFICIAL = {
    # no <discussion> block: blocks .5·.25 + sentences .125 + whitespace .0625; a single block fails at -0.75
    "blocks_in_order": (0.3125, 0, -0.75),
    # turn lines 3 of 4 lines; numbers 1, 3, 4 at positions 1, 2, 3: 1 of 3 in place
    "turn_line_syntax": (1 - 0.1875 * 0.25 - 0.1875 * 2 / 3, 0, 0.25 * (1 - 0.1875 * 0.25 - 0.1875 * 2 / 3)),
    # numbers 1, 2, 5, 4: 3 of 4 in place
    "consecutive_numbering": (1 - 0.1875 * 0.25, 0, 0.25 * (1 - 0.1875 * 0.25)),
    # roles and the moderator-first turn are reported, not scored, officially
    "at_least_two_roles": (1.0, 1, 1.0),
    "moderator_first": (1.0, 1, 1.0),
    # one sentence: half credit
    "conclusion_two_to_four_sentences": (1 - 0.125 * 0.5, 0, 0.25 * (1 - 0.125 * 0.5)),
    # text before <discussion>: the envelope fails; the outer text has no whitespace
    "no_stray_text": (1 - 0.1875, 0, 0.25 * (1 - 0.1875)),
}


@pytest.mark.parametrize("check", CHECKS)
def test_each_broken_transcript_fails_its_check(check: str) -> None:
    report = validate_transcript(BROKEN[check].rstrip(" "))
    failed = [c.name for c in report.failed]
    assert check in failed, failed
    dense, exact, score = OFFICIAL[check]
    assert report.exact == exact
    assert report.dense == pytest.approx(dense, abs=1e-12)
    assert report.score == pytest.approx(score, abs=1e-12)
    assert all(c.detail for c in report.failed)


def test_stray_whitespace_and_too_long_conclusions_fail() -> None:
    assert "no_stray_text" in [c.name for c in validate_transcript(VALID.replace("Surgery?", "Surgery?  ")).failed]
    five = "One. Two. Three. Four. Five."
    report = validate_transcript(VALID.replace("The board recommends", f"{five} The board recommends"))
    assert "conclusion_two_to_four_sentences" in [c.name for c in report.failed]


def test_overlength_penalty_follows_e2() -> None:
    def penalty(tokens: int) -> float:
        return validate_transcript(VALID, response_tokens=tokens).overlength_penalty

    assert penalty(6144) == 0.0
    assert penalty(7168) == pytest.approx(0.5)
    assert penalty(9000) == 1.0
    report = validate_transcript(VALID, response_tokens=8192)
    assert report.score == pytest.approx(0.0)
    # no block at all fails closed at -1 (official failure reason 3), whatever the length
    assert validate_transcript("nothing", response_tokens=8192).score == pytest.approx(-1.0)


def test_render_and_parse_round_trip() -> None:
    parsed = parse_transcript(VALID)
    assert parsed is not None and [t.role for t in parsed.turns] == ["Moderator", "Radiologist", "Moderator",
                                                                     "Thoracic Surgeon"]
    assert parsed.render() == VALID
    messy = Transcript(turns=[Turn(number=1, role="Moderator", text="line one\nline  two"),
                              Turn(number=2, role="Dr: X <y>", text="ok")], conclusion="A. B.")
    # The render passes every diagnostic check; officially "A." and "B." are initials, not sentence ends, so the
    # conclusion has no sentence and the official exact credit is 0 (format rules "3").
    report = validate_transcript(messy.render())
    assert report.failed == [] and report.exact == 0
    assert report.official is not None and report.official["format_conclusion_sentence_count"] == 0
