"""The board protocol records the official App. E.2 format score (format rules "3"): dense, exact, score, the
repetition and overlength penalties and the failure reason as the authors' reward code computes them, fed the
truncation flag and the response's length and limit from the trace; the seven checks stay as diagnostics.

Every expected value is worked out here by hand from the official weights (blocks .25, half per block;
envelope .1875; turn syntax .1875 as a fraction of lines; numbering .1875 as a fraction of turns; conclusion
sentences .125, half for 1 or 5; outer whitespace .0625; score .25·dense + .75·exact; a truncated response or
no block -1, one block -0.75)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main
from consilium.graphs.board.repetition import measure_repetition, repetition_penalty
from consilium.graphs.board.trace import BoardTrace
from consilium.graphs.board.transcript import parse_transcript
from consilium.graphs.board.validate import validate_transcript
from consilium.graphs.registry import read_trace

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
V1_3_SINGLE = ROOT / "tests" / "fixtures" / "v1.3" / "tumor-board-nsclc.board-single.trace.json"

WELL = (
    "<discussion>\n"
    "<turn 1> Moderator: A 64-year-old with a 4 cm right upper lobe mass. Radiology?\n"
    "<turn 2> Radiologist: One ipsilateral hilar node, no distant disease.\n"
    "<turn 3> Moderator: Surgery?\n"
    "<turn 4> Thoracic Surgeon: Resectable by lobectomy.\n"
    "</discussion>\n"
    "<conclusion>The board recommends lobectomy with nodal dissection. Adjuvant therapy depends on "
    "final pathology and EGFR status.</conclusion>"
)
MISNUMBERED = WELL.replace("<turn 3>", "<turn 5>")
# The radiologist opens and a turn has a doubled space: two diagnostics fail, neither is scored officially.
LOOSE = WELL.replace("<turn 1> Moderator:", "<turn 1> Radiologist:").replace("Resectable by", "Resectable  by")
TRUNCATED = WELL[:WELL.index(" disease.")]  # cut off inside turn 2: no closing tag, no conclusion
ONE_BLOCK = ("The board met on the case and agreed.\n<conclusion>The board recommends lobectomy. Adjuvant therapy "
             "depends on pathology.</conclusion>")

#: name → (transcript, finish reason, dense, exact, score, failure reason, diagnostics that fail)
FIXTURES: dict[str, tuple[str, str, float, int, float, int, list[str]]] = {
    "well": (WELL, "stop", 1.0, 1, 1.0, 0, []),
    # numbers 1, 2, 5, 4: three of four in place, numbering credit .75
    "misnumbered": (MISNUMBERED, "stop", 1 - 0.1875 / 4, 0, 0.25 * (1 - 0.1875 / 4), 0, ["consecutive_numbering"]),
    "loose": (LOOSE, "stop", 1.0, 1, 1.0, 0, ["moderator_first", "no_stray_text"]),
    # nothing but the outer-whitespace check holds; truncation fails closed at -1
    "truncated": (TRUNCATED, "length", 0.0625, 0, -1.0, 1,
                  ["blocks_in_order", "turn_line_syntax", "consecutive_numbering", "at_least_two_roles",
                   "moderator_first", "conclusion_two_to_four_sentences", "no_stray_text"]),
    # half the blocks credit (.125), two sentences (.125), no outer whitespace (.0625); one block fails at -0.75
    "one_block": (ONE_BLOCK, "stop", 0.125 + 0.125 + 0.0625, 0, -0.75, 4,
                  ["blocks_in_order", "turn_line_syntax", "consecutive_numbering", "at_least_two_roles",
                   "moderator_first", "conclusion_two_to_four_sentences", "no_stray_text"]),
}


def _board(tmp: Path, name: str, text: str, finish: str, *extra: str) -> Path:
    script = tmp / f"{name}.json"
    script.write_text(json.dumps({"model": "scripted-board", "rules": [
        {"stage": "board_turn", "response": text, "finish_reason": finish}]}))
    out = tmp / name
    main(["board", "--case", str(CASE), "--model", f"scripted:{script}", "--out", str(out), *extra])
    [path] = list(out.glob("*/*.trace.json"))
    return path


@pytest.fixture(scope="module")
def boards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each fixture written by one single-mode call under the otb-paper preset (no repair, a cut-off answer
    kept), the well-formed one also under the default settings, and the shipped scripted panel's agents board."""
    tmp = tmp_path_factory.mktemp("official-format")
    paths = {name: _board(tmp, name, text, finish, "--preset", "otb-paper")
             for name, (text, finish, *_) in FIXTURES.items()}
    paths["well-default"] = _board(tmp, "well-default", WELL, "stop", "--mode", "single")
    main(["board", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp / "panel")])
    [paths["panel"]] = list((tmp / "panel").glob("*/*.trace.json"))
    return paths


def _trace(path: Path) -> BoardTrace:
    trace = read_trace(path)
    assert isinstance(trace, BoardTrace)
    return trace


@pytest.mark.parametrize("name", list(FIXTURES))
def test_a_board_records_the_official_format_score_of_its_transcript(boards: dict[str, Path], name: str) -> None:
    text, finish, dense, exact, score, failure, failing = FIXTURES[name]
    trace = _trace(boards[name])
    report = trace.validation
    assert report is not None and trace.transcript == text and len(trace.calls) == 1
    assert report.rules == "3" and report.repetition is None
    assert report.dense == pytest.approx(dense, abs=1e-12) and report.exact == exact
    assert report.score == pytest.approx(score, abs=1e-12) and report.failure_reason == failure
    assert [c.name for c in report.failed] == failing and all(c.detail for c in report.failed)
    official = report.official
    assert official is not None and official["format_score"] == report.score
    assert official["response_truncated"] == float(finish == "length")


@pytest.mark.parametrize("name", ["well", "misnumbered", "one_block"])
def test_a_single_board_is_scored_on_its_final_calls_length_under_that_calls_limit(
        boards: dict[str, Path], name: str) -> None:
    trace = _trace(boards[name])
    assert trace.validation is not None and trace.validation.official is not None
    final = trace.calls[-1]
    assert trace.validation.official["valid_response_length"] == final.usage.output_tokens
    assert trace.validation.official["response_length_limit"] == 65536  # the preset's budget
    assert trace.validation.overlength_penalty == 0.0  # a short answer, far below 6,144 tokens


def test_under_the_default_budget_the_limit_is_the_single_stages_3072(boards: dict[str, Path]) -> None:
    trace = _trace(boards["well-default"])
    assert trace.validation is not None and trace.validation.official is not None
    assert trace.validation.official["response_length_limit"] == 3072
    assert trace.validation.score == 1.0


def test_the_overlength_ramp_ends_at_the_smaller_of_8192_and_the_limit() -> None:
    # end = min(8192, 7168) = 7168: 6656 tokens are half way from 6144; at or past a limit at or below 6144
    # the penalty is all or nothing.
    assert validate_transcript(WELL, response_tokens=6656, length_limit=7168).overlength_penalty == 0.5
    assert validate_transcript(WELL, response_tokens=6656, length_limit=7168).score == 0.5
    assert validate_transcript(WELL, response_tokens=3071, length_limit=3072).overlength_penalty == 0.0
    assert validate_transcript(WELL, response_tokens=3072, length_limit=3072).score == 0.0


def test_the_scripted_agents_board_scores_one_where_the_earlier_rules_gave_zero(boards: dict[str, Path]) -> None:
    trace = _trace(boards["panel"])
    report = trace.validation
    assert report is not None and report.official is not None and len(trace.turns) == 12
    # Every check holds (12 turn lines numbered 1-12, a two-sentence conclusion, the exact envelope). Its most
    # frequent 4-grams ("i agree i would", …) come 6 times, under the official 12, so no loop is detected.
    assert report.official["format_repetition_detected"] == 0.0
    assert (report.dense, report.exact, report.repetition_penalty, report.score) == (1.0, 1, 0.0, 1.0)
    # Rules "2" counted every repeated turn: nine repeats in a row, the whole score lost.
    parsed = parse_transcript(trace.transcript)
    assert parsed is not None
    earlier = repetition_penalty(measure_repetition([t.text for t in parsed.turns], parsed.conclusion))
    assert earlier == 1.0 and max(-1.0, 0.25 + 0.75 - earlier) == 0.0
    # The transcript is assembled: its length is the output of every turn and conclusion call used, no limit.
    used = sum(c.usage.output_tokens for c in trace.calls if c.stage in ("board_turn", "conclusion") and not c.error)
    assert report.official["valid_response_length"] == used and report.official["response_length_limit"] == 0.0


def test_each_board_replays_identically(boards: dict[str, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    paths = [boards[name] for name in ("well", "misnumbered", "truncated", "panel")]
    assert main(["replay", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert out.count(": identical (") == len(paths) and "not compared" not in out


def test_a_rules_3_validation_is_still_compared_on_replay(boards: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    data: dict[str, Any] = json.loads(boards["misnumbered"].read_text())
    data["validation"]["score"] = 0.25  # not what the rules make of this transcript
    edited = tmp_path / "edited.trace.json"
    edited.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["replay", str(edited)]) == 1
    assert "different: validation.score: recorded 0.25, replayed 0.23828125" in capsys.readouterr().out


def test_a_rules_2_trace_replays_on_what_both_rules_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / V1_3_SINGLE.name
    shutil.copy(V1_3_SINGLE, old)
    trace = _trace(old)
    assert trace.validation is not None and trace.validation.rules == "2" and trace.validation.official is None
    capsys.readouterr()
    assert main(["replay", str(old)]) == 0
    assert "identical (3 recorded calls served, 0 model calls" in (out := capsys.readouterr().out)
    assert "validation not compared: recorded under format rules 2, replayed under 3" in out
