"""``cohort --judge`` with the reward's three OpenTumorBoard rubrics writes each board's ``<trace>.otb-reward.json``
as ``consilium judge`` does (one writer: consilium/judges/board_reward.py ``write_judged``). Three boards whose
transcripts and judges' answers differ; each expected match and reward is worked out by hand from the authors'
reward (docs/opentumorboard.md, "The reward")."""

from __future__ import annotations

import json
import shutil

import pytest
from support.otb_release import write_release
from support.scripts import Scripted

from consilium.cli import main

WELL_FORMED = ("<discussion>\n<turn 1> Moderator: Shall we operate?\n<turn 2> Surgeon: Yes, after staging.\n"
               "</discussion>\n<conclusion>Operate after staging. Screen for the trial.</conclusion>")
LONGER = ("<discussion>\n<turn 1> Moderator: Radiotherapy first?\n<turn 2> Radiation Oncologist: Yes, short course."
          "\n<turn 3> Medical Oncologist: Then chemotherapy.\n</discussion>\n"
          "<conclusion>Short-course radiotherapy, then chemotherapy. Review at six weeks.</conclusion>")
NO_CONCLUSION = "<discussion>\n<turn 1> Moderator: We ran out of time.\n</discussion>"  # one block: fails closed
SCOPE = {"therapy": "positive", "surgery": "absent", "next_action": "positive", "clinical_trial": "absent",
         "rationale": "r"}


def consistency(score: int) -> dict[str, object]:
    return {"therapy": 4, "surgery": -1, "next_action": 2, "clinical_trial": -1, "discussion_quality": 3,
            "discussion_conclusion_consistency": score, "grounding_and_safety": 4, "major_contradiction": False,
            "unsafe_addition": False, "rationale": "r"}


def decisions(therapy: int, next_action: int) -> dict[str, object]:
    return {"therapy": therapy, "surgery": -1, "next_action": next_action, "clinical_trial": -1, "rationale": "r"}


@pytest.fixture(scope="module")
def rewards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    tmp = tmp_path_factory.mktemp("otb-cohort-reward")
    imported = tmp / "imported"
    assert main(["cases", "import", "opentumorboard", str(write_release(tmp / "data")), "--out",
                 str(imported)]) == 0
    cases = tmp / "cases"
    cases.mkdir()
    for name in ("sim_000001", "sim_000002", "sim_000003"):
        shutil.copy(imported / f"{name}.yaml", cases)
    case = {n: {"contains": f"Summary of case {n}:"} for n in (1, 2, 3)}
    # Case 2's meeting (and each repair asked of it, which quotes no case) has no conclusion.
    panel = (Scripted("board-model").rule("board_turn", where=case[1], response=WELL_FORMED)
             .rule("board_turn", where=case[3], response=LONGER).rule("board_turn", response=NO_CONCLUSION)
             .write(tmp / "panel.json"))
    judge = (Scripted("judge").judge(SCOPE, item="scope:decisions")
             .score(2, item="conclusion:conclusion_alignment", where=case[3])
             .score(4, item="conclusion:conclusion_alignment")
             .judge(decisions(5, 1), item="conclusion:decisions", where=case[3])
             .judge(decisions(4, 2), item="conclusion:decisions")
             .judge(consistency(3), item="conclusion:consistency", where=case[3])
             .judge(consistency(5), item="conclusion:consistency").write(tmp / "judge.json"))
    runs = tmp / "runs"
    assert main(["cohort", "--protocol", "board", "--modes", "single", "--cases", str(cases), "--model", panel,
                 "--judge", "otb-conclusion-alignment", "--judge", "otb-four-decision", "--judge", "otb-consistency",
                 "--scope", "frozen", "--judge-model", judge, "--out", str(runs)]) == 0
    found = {path.name.split(".")[0]: json.loads(path.read_text()) for path in runs.rglob("*.otb-reward.json")}
    return found


def test_cohort_judge_writes_every_boards_reward_beside_its_trace(rewards: dict[str, dict[str, object]]) -> None:
    assert sorted(rewards) == ["sim_000001", "sim_000002", "sim_000003"]
    assert {name: r["judged"] for name, r in rewards.items()} == {"sim_000001": True, "sim_000002": False,
                                                                   "sim_000003": True}


def test_a_well_formed_board_gets_the_reward_its_three_judges_give(rewards: dict[str, dict[str, object]]) -> None:
    # Scope: therapy (w 1.00) and next action (w 1.15). Case 1: alignment 4, therapy 4, next action 2,
    # consistency 5; its transcript is well formed (format score 1).
    d1 = (1.00 * 4 / 5 + 1.15 * 2 / 5) / (1.00 + 1.15)
    match1 = 0.40 * (4 - 1) / 4 + 0.35 * d1 * 5 / 5 + 0.25 * d1
    one = rewards["sim_000001"]
    assert one["format_score"] == 1.0 and one["match"] == pytest.approx(match1)
    assert one["reward"] == pytest.approx(match1 + 0.10 * 1.0)
    # Case 3: alignment 2, therapy 5, next action 1, consistency 3.
    d3 = (1.00 * 5 / 5 + 1.15 * 1 / 5) / (1.00 + 1.15)
    match3 = 0.40 * (2 - 1) / 4 + 0.35 * d3 * 3 / 5 + 0.25 * d3
    three = rewards["sim_000003"]
    assert (three["alignment"], three["decisions"], three["consistency"]) == pytest.approx((0.25, d3, 0.6))
    assert three["match"] == pytest.approx(match3) and three["reward"] == pytest.approx(match3 + 0.10)


def test_a_board_that_fails_the_format_takes_the_invalid_match(rewards: dict[str, dict[str, object]]) -> None:
    # One block only: the format score fails closed at -0.75; never judged: match -0.20, reward -0.20 + 0.10·-0.75.
    two = rewards["sim_000002"]
    assert (two["format_score"], two["format_failure"]) == (-0.75, "one_block")
    assert two["match"] == pytest.approx(-0.20) and two["reward"] == pytest.approx(-0.275)
