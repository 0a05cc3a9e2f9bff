"""The App. E.2 format checks, on a valid transcript and on one broken transcript per check."""

from __future__ import annotations

import pytest

from consilium.graphs.board.transcript import Transcript, Turn, parse_transcript
from consilium.graphs.board.validate import CHECKS, overlength_penalty, validate_transcript

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


@pytest.mark.parametrize("check", CHECKS)
def test_each_broken_transcript_fails_its_check(check: str) -> None:
    report = validate_transcript(BROKEN[check].rstrip(" "))
    failed = [c.name for c in report.failed]
    assert check in failed, failed
    assert report.exact == 0
    assert report.dense == pytest.approx((len(CHECKS) - len(failed)) / len(CHECKS), abs=1e-6)
    assert report.score == pytest.approx(0.25 * report.dense, abs=1e-6)
    assert all(c.detail for c in report.failed)


def test_stray_whitespace_and_too_long_conclusions_fail() -> None:
    assert "no_stray_text" in [c.name for c in validate_transcript(VALID.replace("Surgery?", "Surgery?  ")).failed]
    five = "One. Two. Three. Four. Five."
    report = validate_transcript(VALID.replace("The board recommends", f"{five} The board recommends"))
    assert "conclusion_two_to_four_sentences" in [c.name for c in report.failed]


def test_overlength_penalty_follows_e2() -> None:
    assert overlength_penalty(6144) == 0.0
    assert overlength_penalty(7168) == pytest.approx(0.5)
    assert overlength_penalty(9000) == 1.0
    report = validate_transcript(VALID, response_tokens=8192)
    assert report.score == pytest.approx(0.0)
    assert validate_transcript("nothing", response_tokens=8192).score == pytest.approx(-1.0)


def test_render_and_parse_round_trip() -> None:
    parsed = parse_transcript(VALID)
    assert parsed is not None and [t.role for t in parsed.turns] == ["Moderator", "Radiologist", "Moderator",
                                                                     "Thoracic Surgeon"]
    assert parsed.render() == VALID
    messy = Transcript(turns=[Turn(number=1, role="Moderator", text="line one\nline  two"),
                              Turn(number=2, role="Dr: X <y>", text="ok")], conclusion="A. B.")
    assert validate_transcript(messy.render()).exact == 1
