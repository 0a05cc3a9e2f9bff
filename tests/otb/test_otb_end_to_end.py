"""OpenTumorBoard end to end with the scripted panel: the released files (five records of each type, gzip
too) import, the imported boards run as a cohort, a Specialist Turn is put to an official role, the three
board judges and the turn judge score them in the authors' layout, and `report --style otb-leaderboard`
summarises them as the leaderboard does. Expected values are worked out by hand from the scripts below."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.isolation import isolated
from support.otb_release import write_release
from support.scripts import Scripted

from consilium.cases import load_case
from consilium.cli import main

TRANSCRIPT = ("<discussion>\n<turn 1> Moderator: Shall we operate?\n<turn 2> Surgeon: Yes, after staging.\n"
              "</discussion>\n<conclusion>Operate after staging. Screen for the trial.</conclusion>")
DECISIONS = {"therapy": 4, "surgery": -1, "next_action": 2, "clinical_trial": -1, "rationale": "r"}
SCOPE = {"therapy": "positive", "surgery": "absent", "next_action": "positive", "clinical_trial": "absent",
         "rationale": "r"}
CONSISTENCY = {"therapy": 4, "surgery": -1, "next_action": 2, "clinical_trial": -1, "discussion_quality": 3,
               "discussion_conclusion_consistency": 5, "grounding_and_safety": 4, "major_contradiction": False,
               "unsafe_addition": False, "rationale": "r"}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("otb-e2e")
    with isolated(tmp):
        data = write_release(tmp / "data")
        cases = tmp / "cases"
        assert main(["cases", "import", "opentumorboard", str(data), "--out", str(cases)]) == 0
        panel = Scripted("board-model").rule("board_turn", response=TRANSCRIPT).write(tmp / "panel.json")
        judge = (Scripted("judge").score(4, item="conclusion:conclusion_alignment")
                 .judge(DECISIONS, item="conclusion:decisions").judge(SCOPE, item="scope:decisions")
                 .judge(CONSISTENCY, item="conclusion:consistency")
                 .judge({"clinical_equivalence_score": 5, "critical_error": False, "unsupported_claim": True,
                         "rationale": "r"}).write(tmp / "judge.json"))
        runs = tmp / "runs"
        assert main(["cohort", "--protocol", "board", "--modes", "single", "--cases", str(cases), "--model", panel,
                     "--judge", "otb-conclusion-alignment", "--judge", "otb-four-decision", "--judge-model", judge,
                     "--allow-missing-reference", "--out", str(runs)]) == 0
        [cohort] = [p for p in runs.iterdir() if p.is_dir()]
        case = load_case(cases / "sim_000001.yaml")
        assert case.reference is not None
        asked = case.reference.answers[0]
        turn_panel = Scripted("board-model").rule("specialist_turn", json={"answer": "Screen for the trial."})
        assert main(["turn", "--case", str(cases / "sim_000001.yaml"), "--model", turn_panel.write(tmp / "t.json"),
                     "--role", str(asked.role), "--question", asked.question, "--out", str(runs / "turns")]) == 0
        [turn] = list((runs / "turns").rglob("*.trace.json"))
        assert main(["judge", str(turn), "--rubric", "otb-clinical-equivalence", "--judge-model", judge]) == 0
        [board] = list(cohort.rglob("sim_000001*.trace.json"))
        assert main(["judge", str(board), "--rubric", "otb-consistency", "--judge-model", judge]) == 0
        assert main(["judge", str(board), "--rubric", "otb-conclusion-alignment", "--rubric", "otb-four-decision",
                     "--judge-model", judge, "--scope", "frozen", "--force"]) == 0
        assert main(["report", str(runs), "--style", "otb-leaderboard"]) == 0
    return {"runs": runs, "cohort": cohort, "board": board}


def _summary(runs: Path) -> dict[str, object]:
    [path] = list(runs.rglob("summary.json"))
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_every_imported_board_is_judged_and_summarised_as_the_leaderboard_does(study: dict[str, Path]) -> None:
    summary = _summary(study["runs"])
    [entry] = summary["task1"]["models"].values()  # type: ignore[index]
    # Six imported cases: sim_000004 and rec3-case_6 have no reference conclusion, so their judgements are not
    # evaluable (judge failures); the other four are scored 4 by alignment.
    assert (entry["items"], entry["scored"], entry["format_failures"], entry["judge_failures"]) == (6, 4, 0, 2)
    assert entry["conclusion_alignment"] == 4.0
    [decisions] = summary["task1_four_decisions"]["models"].values()  # type: ignore[index]
    # Therapy 4 and next action 2 on each scored case; surgery and trial out of scope (-1) everywhere.
    assert decisions["therapy"] == {"mean": 4.0, "cases": 4} and decisions["next_action"] == {"mean": 2.0, "cases": 4}
    assert decisions["surgery"] == {"mean": None, "cases": 0}


def test_the_turn_is_summarised_with_its_question_type(study: dict[str, Path]) -> None:
    [entry] = _summary(study["runs"])["task2"]["models"].values()  # type: ignore[index]
    # One turn: equivalence 5, one unsupported claim; qa_000001's type in the released record is "what".
    assert (entry["items"], entry["clinical_equivalence"], entry["unsupported_claim_rate"]) == (1, 5.0, 1.0)
    assert list(entry["by_question_type"]) == ["what"]


def test_the_board_gets_its_reward_from_its_three_judges(study: dict[str, Path]) -> None:
    [reward_file] = list(study["board"].parent.glob("sim_000001*.otb-reward.json"))
    reward = json.loads(reward_file.read_text())
    # Frozen scope: therapy and next action. alignment (4-1)/4 = .75; decisions (1.00·4/5 + 1.15·2/5)/(2.15);
    # consistency 5/5; match = .4·.75 + .35·d·1 + .25·d; the transcript is well formed: format 1, reward + .1.
    d = (1.00 * 4 / 5 + 1.15 * 2 / 5) / 2.15
    match = 0.4 * 0.75 + 0.35 * d + 0.25 * d
    assert reward["judged"] is True
    assert reward["match"] == pytest.approx(match) and reward["reward"] == pytest.approx(match + 0.1)
