"""The leaderboard's summary rules (AnqiLi24/OpenTumorBoard ``summarize_llm_judge_batch.py``) on varied
items: two models, scored items, format failures floored at 1, judge failures left out, decisions out of
scope, question types. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from consilium.judges.record import Judgement, JudgementItem
from consilium.otb.leaderboard import DECISIONS, Item, decision_valid, summary
from consilium.reports.otb_leaderboard import leaderboard_items
from consilium.reports.otb_responses import Response


def _align(model: str, score: int) -> Item:
    return Item(model, "scored", {"conclusion_alignment": score})


def test_conclusion_alignment_floors_format_failures_and_leaves_judge_failures_out() -> None:
    items = [_align("a", 4), _align("a", 5), Item("a", "format_failure"), Item("a", "judge_failure"),
             _align("b", 2), Item("b", "judge_failure")]
    got = summary("conclusion_alignment", items)
    assert list(got["models"]) == ["a", "b"]
    # a: (4 + 5 + 1) / 3; b: 2 / 1.
    assert got["models"]["a"] == {"items": 4, "scored": 2, "format_failures": 1, "judge_failures": 1,
                                  "conclusion_alignment": pytest.approx(10 / 3)}
    assert got["models"]["b"]["conclusion_alignment"] == 2.0


def test_only_format_failures_score_the_floor_and_nothing_scores_none() -> None:
    got = summary("conclusion_alignment", [Item("a", "format_failure"), Item("b", "judge_failure")])
    assert (got["models"]["a"]["conclusion_alignment"], got["models"]["b"]["conclusion_alignment"]) == (1.0, None)


def test_four_decisions_average_each_decision_over_the_cases_that_take_it() -> None:
    rows = [{"therapy": 4, "surgery": -1, "next_action": 2, "clinical_trial": -1},
            {"therapy": 2, "surgery": 5, "next_action": 1, "clinical_trial": -1},
            {"therapy": 3, "surgery": 3, "next_action": -1, "clinical_trial": -1}]
    items = [Item("m", "scored", {**r, "rationale": "x"}) for r in rows] + [Item("m", "format_failure")]
    entry = summary("four_decisions", items)["models"]["m"]
    # therapy (4+2+3)/3 = 3 over 3; surgery (5+3)/2 = 4 over 2; next action (2+1)/2 = 1.5 over 2; trial none.
    assert {d: entry[d] for d in ("therapy", "surgery", "next_action", "clinical_trial")} == {
        "therapy": {"mean": 3.0, "cases": 3}, "surgery": {"mean": 4.0, "cases": 2},
        "next_action": {"mean": 1.5, "cases": 2}, "clinical_trial": {"mean": None, "cases": 0}}
    assert entry["format_failures"] == 1 and "composite" not in entry


def _turn(model: str, score: int, critical: bool, unsupported: bool, qa_type: str) -> Item:
    return Item(model, "scored", {"clinical_equivalence_score": score, "critical_error": critical,
                                  "unsupported_claim": unsupported}, qa_type)


def test_specialist_turn_rates_are_fractions_of_scored_items_with_a_question_type_breakdown() -> None:
    items = [_turn("m", 5, False, False, "why"), _turn("m", 2, True, False, "what"),
             _turn("m", 3, True, True, "what"), Item("m", "format_failure", qa_type="why"),
             Item("m", "judge_failure", qa_type="what")]
    entry = summary("clinical_equivalence", items)["models"]["m"]
    # equivalence (5 + 2 + 3 + 1) / 4; critical 2/3, unsupported 1/3 of the three scored.
    assert entry["clinical_equivalence"] == pytest.approx(11 / 4)
    assert (entry["critical_error_rate"], entry["unsupported_claim_rate"]) == (pytest.approx(2 / 3),
                                                                               pytest.approx(1 / 3))
    # The breakdown is over scored items only: "what" 2 items (2, 3), "why" 1 item (5); no floor there.
    assert entry["by_question_type"] == {
        "what": {"count": 2, "clinical_equivalence": 2.5, "critical_error_rate": 1.0, "unsupported_claim_rate": 0.5},
        "why": {"count": 1, "clinical_equivalence": 5.0, "critical_error_rate": 0.0, "unsupported_claim_rate": 0.0}}


def test_a_decision_scored_0_is_out_of_the_official_range_and_fails_its_item() -> None:
    # The summarizer's validate: each decision -1 or 1-5; 0 (allowed in scope by the reward's frozen scale) and 6
    # are rejected.
    assert [v for v in range(-2, 7) if decision_valid(v)] == [-1, 1, 2, 3, 4, 5]


def _judged(case: str, scores: dict[str, int]) -> Response:
    items = [JudgementItem(component="conclusion", criterion=d, score=scores[d]) for d in DECISIONS]
    return Response("task1", "m [single]", case, "Operate. Then review.", "ref",
                    judgements={"otb-four-decision": Judgement.model_construct(items=items)})


def test_a_reported_four_decision_item_holding_a_0_is_a_judge_failure_and_its_scores_reach_no_mean() -> None:
    found = [_judged("c1", {"therapy": 4, "surgery": -1, "next_action": 2, "clinical_trial": -1}),
             _judged("c2", {"therapy": 0, "surgery": 5, "next_action": 3, "clinical_trial": -1}),
             _judged("c3", {"therapy": 3, "surgery": 3, "next_action": -1, "clinical_trial": 5}),
             Response("task1", "m [single]", "c4", "")]  # no conclusion: a format failure
    items = leaderboard_items(found, "task1", "otb-four-decision", "four_decisions")
    assert [i.status for i in items] == ["scored", "judge_failure", "scored", "format_failure"]
    entry = summary("four_decisions", items)["models"]["m [single]"]
    # c2 left out whole: therapy (4+3)/2 = 3.5; surgery 3 (c3 only), next action 2 (c1 only), trial 5 (c3 only).
    # Were c2 scored, its 0 would pull therapy to (4+0+3)/3 and surgery to (5+3)/2.
    assert (entry["scored"], entry["format_failures"], entry["judge_failures"]) == (2, 1, 1)
    assert {d: entry[d] for d in DECISIONS} == {
        "therapy": {"mean": 3.5, "cases": 2}, "surgery": {"mean": 3.0, "cases": 1},
        "next_action": {"mean": 2.0, "cases": 1}, "clinical_trial": {"mean": 5.0, "cases": 1}}
