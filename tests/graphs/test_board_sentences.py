"""The board moderator's instructions and answer formats are data (consilium/graphs/board/prompts/
moderator.yaml), sent byte for byte as they were when they were written in code: a recorded meeting replays
only if every request is the same."""

from __future__ import annotations

import pytest

from consilium.graphs.board.agents import _instruction, moderator_sentences
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.protocol import BOARD
from consilium.graphs.board.transcript import Turn

SPOKEN = [Turn(number=1, role="Moderator", text="Welcome.")]


# The alternating protocol's two instructions and answer format went with it: a trace that ran it is refused
# for replay (tests/traces/test_old_records.py).
@pytest.mark.parametrize(("turns", "actions", "expected"), [
    ([], ["ask"], 'Open the meeting: present the case in a few sentences and give the floor to the specialist '
                        'who should speak first, with your question (action "ask").'),
    (SPOKEN, ["close"], 'Time is up: close the meeting in one or two sentences (action "close").'),
    (SPOKEN, ["ask", "pass", "close"],
     'Move the meeting on: either give the floor to a specialist with a question (action "ask"; set responds_to to '
     "a specialist's turn if your question is about it), or let a specialist reply directly to another "
     "specialist's turn without speaking yourself (action \"pass\", responds_to that turn), or close the meeting "
     'once the board has reached an actionable plan (action "close"; speaker is then ignored).'),
    (SPOKEN, ["pass"], "Move the meeting on: let a specialist reply directly to another specialist's turn "
                             'without speaking yourself (action "pass", responds_to that turn).'),
])
def test_the_instruction_is_the_text_it_was(turns: list[Turn], actions: list[str], expected: str) -> None:
    assert _instruction(turns, actions) == expected


def test_the_answer_formats_are_the_text_they_were() -> None:
    said = moderator_sentences()
    assert said.format_open.startswith('Answer with one JSON object: {"action": "ask", "pass" or "close", ')
    assert said.format_open.endswith('(for pass: the point they should take up; it is not said aloud)"}')


def test_a_board_trace_records_the_sentences_file() -> None:
    hashes = BOARD.prompt_hashes()
    assert "moderator.yaml" in hashes and "board_moderator" in hashes and "preamble" in hashes
    assert BoardConfig().max_turns == 12
