"""OpenTumorBoard judges as the paper runs them.

The four-decision rubric asks for its four scores in one call with one schema
(opentumorboard.txt App. C.3 L186); scope is frozen from the case's candidate-blind labelling
(``reference.decisions``, null = absent: locked to −1, any answer there ignored) or decided by the
judge (App. E.2 L194); the weighted mean uses the paper's weights over the dimensions in scope, and a
dimension not evaluable does not void the others. A judge answering in the paper's own schema
(nested conclusion alignment, C.2 L178; score first, C.1 L172) is accepted and read to the same score;
a blank rationale goes back to the judge and is then not evaluable. Every expected number is worked
out here, never by the code under test.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from consilium.cli import main
from consilium.graphs.registry import read_trace
from consilium.judges.record import Judgement
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup, judge_trace
from consilium.models import ModelRequest
from consilium.models.backends.scripted import ScriptedModel
from consilium.models.structured import OutputInvalid

ROOT = Path(__file__).resolve().parents[2]
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"  # clinical_trial: null
W = {"therapy": 1.00, "surgery": 1.25, "next_action": 1.15, "clinical_trial": 2.00}  # opentumorboard.txt E.2 L194
DIMS = tuple(W)
FOUR, ALIGN, EQUIV = (load_rubric(n) for n in ("otb-four-decision", "otb-conclusion-alignment",
                                              "otb-clinical-equivalence"))
BOARD = {"model": "scripted-board", "rules": [
    {"stage": "role_assignment", "json": {"primary": {"label": "Medical oncologist", "justification": "x"},
                                          "supporting": [{"label": "Radiologist", "justification": "y"}]}},
    {"stage": "board_turn", "role": "board", "response": (
        "<discussion>\n<turn 1> Moderator: Staging?\n<turn 2> Radiologist: Early.\n</discussion>\n"
        "<conclusion>Lobectomy after staging. Adjuvant chemotherapy then osimertinib.</conclusion>")}]}


def weighted(scores: dict[str, int]) -> float | None:
    """App. E.2 L194 by hand: Σ w·(s/5) / Σ w over the dimensions with s ≠ −1."""
    used = {d: s for d, s in scores.items() if s != -1}
    return sum(W[d] * s / 5 for d, s in used.items()) / sum(W[d] for d in used) if used else None


def board_trace(tmp_path: Path, reference: dict[str, Any] | None = None) -> Path:
    """A single-mode board trace of the NSCLC case, its reference replaced when one is given."""
    case = yaml.safe_load(NSCLC.read_text())
    if reference is not None:
        case["reference"] = reference
    tmp_path.mkdir(parents=True, exist_ok=True)
    case_path = tmp_path / "case.yaml"
    case_path.write_text(yaml.safe_dump(case))
    panel = tmp_path / "board.json"
    panel.write_text(json.dumps(BOARD))
    out = tmp_path / "runs"
    assert main(["board", "--case", str(case_path), "--mode", "single", "--model", f"scripted:{panel}",
                 "--out", str(out)]) == 0
    [trace] = list(out.rglob("*.trace.json"))
    return trace


def judge_cli(tmp_path: Path, trace: Path, rubric: str, answer: Any, *extra: str, rc: int = 0) -> Judgement:
    """`consilium judge` with a scripted judge giving ``answer`` to every call (a list: in turn)."""
    script = tmp_path / f"judge-{rubric}.json"
    rule = {"responses": answer} if isinstance(answer, list) else {"json": answer}
    script.write_text(json.dumps({"model": "scripted-judge", "rules": [{"stage": "judge", **rule}]}))
    assert main(["judge", str(trace), "--rubric", rubric, "--judge-model", f"scripted:{script}", *extra]) == rc
    [path] = list(trace.parent.glob(f"*.judge.{rubric}.json"))
    return Judgement.model_validate_json(path.read_text())


def judge_api(trace: Path, rubric: str, answer: Any, **setup: Any) -> tuple[Judgement, list[ModelRequest]]:
    """:func:`judge_trace` with a responder that records each request it answers."""
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> Any:
        seen.append(request)
        return answer

    model = ScriptedModel(responder=respond, model_id="scripted-judge")
    return asyncio.run(judge_trace(read_trace(trace), trace.name, load_rubric(rubric),
                                   JudgeSetup(model=model, **setup))), seen


def answer(therapy: int, surgery: int, next_action: int, clinical_trial: int, *,
           rationale: str = "r") -> dict[str, Any]:
    return {"therapy": therapy, "surgery": surgery, "next_action": next_action, "clinical_trial": clinical_trial,
            "rationale": rationale}


# --- the four-decision rubric ---------------------------------------------------------------------------

@pytest.mark.parametrize("scores", [(4, 2, 5, 5), (1, 5, 3, 1), (5, -1, 2, 4), (-1, -1, -1, 5)])
def test_frozen_scope_locks_an_absent_dimension_and_ignores_an_answer_on_it(tmp_path: Path,
                                                                             scores: tuple[int, ...]) -> None:
    trace = board_trace(tmp_path)  # the case labels clinical_trial null: absent
    record, seen = judge_api(trace, "otb-four-decision", answer(*scores))
    # One call, one schema for the four scores; the absent dimension allows only -1 there. An answer
    # marking an in-scope dimension -1 is invalid: it goes back to the judge (repairs, then the
    # schema-constrained attempt), all under the one role.
    invalid = any(s == -1 for d, s in zip(DIMS, scores, strict=True) if d != "clinical_trial")
    assert (len(seen) > 1) == invalid and len(record.calls) == len(seen)
    assert {c.role for c in record.calls} == {"conclusion:decisions"}
    schema = seen[0].output_schema
    assert schema is not None and schema.json_schema is not None
    properties = schema.json_schema["properties"]
    assert properties["clinical_trial"] == {"type": "integer", "enum": [-1]}
    # The labelling found the other three decided: in scope, so the judge may not mark them -1 (E.2 L194), and
    # scores them 0-5 as the authors' reward code does (training/verl_otb/reward.py).
    assert properties["therapy"] == {"type": "integer", "minimum": 0, "maximum": 5}
    # the authors' layout: the task is in the system message, the user message holds the data alone
    assert '"clinical_trial": -1, "rationale"' in seen[0].messages[0].content
    summary = record.aggregates["conclusion"]
    assert summary["scope"] == "frozen" and summary["locked"] == ["clinical_trial"]
    answered = dict(zip(DIMS, scores, strict=True))
    # A -1 on a dimension frozen in scope is an invalid answer there: that dimension is not evaluable.
    refused = sorted(d for d, s in answered.items() if s == -1 and d != "clinical_trial")
    expected = {d: s for d, s in answered.items() if d not in refused} | {"clinical_trial": -1}
    if len(refused) == 3:  # nothing usable is left: the whole answer is not evaluable, the lock included
        assert summary["not_evaluable_dimensions"] == sorted(DIMS) and summary["weighted_mean"] is None
        return
    assert summary["in_scope"] == sorted(d for d, s in expected.items() if s != -1)
    assert summary["not_evaluable_dimensions"] == refused
    assert "clinical_trial" not in summary["in_scope"]
    assert summary["weighted_mean"] == pytest.approx(weighted(expected))
    trial = next(i for i in record.items if i.criterion == "clinical_trial")
    assert trial.score == -1 and trial.detail["locked"] and trial.detail["scope"] == "frozen"
    assert trial.detail.get("ignored_answer") == (scores[3] if scores[3] != -1 else None)
    assert {i.criterion: i.detail["weight"] for i in record.items} == W


def test_frozen_scope_ignores_the_answer_by_hand(tmp_path: Path) -> None:
    """The worked example: therapy 4, surgery 2, next_action 5 and a 5 on the absent clinical trial."""
    record = judge_cli(tmp_path, board_trace(tmp_path), "otb-four-decision", answer(4, 2, 5, 5))
    assert record.aggregates["conclusion"]["weighted_mean"] == pytest.approx(
        (1.00 * 4 / 5 + 1.25 * 2 / 5 + 1.15 * 5 / 5) / (1.00 + 1.25 + 1.15))
    assert len(record.calls) == 1


def test_judge_scope_gives_the_full_schema_and_the_trial_its_weight(tmp_path: Path) -> None:
    trace = board_trace(tmp_path)
    record, seen = judge_api(trace, "otb-four-decision", answer(4, 2, 5, 5), scope="judge")
    assert seen[0].output_schema is not None and seen[0].output_schema.json_schema is not None
    assert seen[0].output_schema.json_schema["properties"]["clinical_trial"]["enum"] == [-1, 1, 2, 3, 4, 5]
    summary = record.aggregates["conclusion"]
    assert summary["scope"] == "judge" and summary["locked"] == []
    assert summary["in_scope"] == ["clinical_trial", "next_action", "surgery", "therapy"]
    assert summary["weighted_mean"] == pytest.approx(
        (1.00 * 4 / 5 + 1.25 * 2 / 5 + 1.15 * 5 / 5 + 2.00 * 5 / 5) / (1.00 + 1.25 + 1.15 + 2.00))
    assert {i.detail["scope"] for i in record.items} == {"judge"}


def test_default_scope_is_frozen_only_where_the_case_labels_its_decisions(tmp_path: Path) -> None:
    unlabelled = board_trace(tmp_path / "u", {"conclusion": "Lobectomy, then adjuvant osimertinib."})
    record = judge_cli(tmp_path / "u", unlabelled, "otb-four-decision", answer(4, 2, 5, 5))
    assert record.aggregates["conclusion"]["scope"] == "judge"
    assert record.aggregates["conclusion"]["in_scope"] == ["clinical_trial", "next_action", "surgery", "therapy"]
    labelled = board_trace(tmp_path / "l")
    assert judge_cli(tmp_path / "l", labelled, "otb-four-decision", answer(4, 2, 5, 5)).aggregates[
        "conclusion"]["scope"] == "frozen"
    again = judge_cli(tmp_path / "l", labelled, "otb-four-decision", answer(4, 2, 5, 5), "--scope", "judge")
    assert again.aggregates["conclusion"]["scope"] == "judge"


def test_one_dimension_not_evaluable_does_not_void_the_others(tmp_path: Path) -> None:
    trace = board_trace(tmp_path)
    bad = {**answer(4, 2, 5, -1), "surgery": "high"}  # every attempt, also the constrained one
    record = judge_cli(tmp_path, trace, "otb-four-decision", bad)
    assert len(record.calls) == 4  # 1 + 2 repairs, then 1 constrained attempt: still one request
    summary = record.aggregates["conclusion"]
    assert summary["not_evaluable"] == 1 and summary["not_evaluable_dimensions"] == ["surgery"]
    assert summary["in_scope"] == ["next_action", "therapy"]
    assert summary["weighted_mean"] == pytest.approx((1.00 * 4 / 5 + 1.15 * 5 / 5) / (1.00 + 1.15))
    surgery = next(i for i in record.items if i.criterion == "surgery")
    assert surgery.not_evaluable and surgery.score is None and surgery.reason
    assert surgery.reason.startswith("invalid judge output on this dimension") and "surgery" in surgery.reason
    assert {i.criterion: i.score for i in record.items} == {"therapy": 4.0, "surgery": None, "next_action": 5.0,
                                                            "clinical_trial": -1.0}


def test_a_repaired_answer_is_read_whole(tmp_path: Path) -> None:
    trace = board_trace(tmp_path)
    record = judge_cli(tmp_path, trace, "otb-four-decision", [{**answer(4, 2, 5, -1), "surgery": 9},
                                                              answer(4, 3, 5, -1)])
    assert len(record.calls) == 2 and "surgery" in (record.calls[0].error or "")
    assert record.aggregates["conclusion"]["not_evaluable"] == 0
    assert record.aggregates["conclusion"]["weighted_mean"] == pytest.approx(weighted(
        {"therapy": 4, "surgery": 3, "next_action": 5}))


def test_the_four_decision_schema_is_the_papers() -> None:
    """App. C.3 L186: the four dimensions in order, then a rationale of 1 to 1200 characters."""
    from consilium.judges.answers import decisions_schema

    full = decisions_schema(FOUR, frozenset()).json_schema
    assert full is not None
    assert list(full["properties"]) == [*DIMS, "rationale"] and full["required"] == [*DIMS, "rationale"]
    assert full["properties"]["rationale"] == {"type": "string", "minLength": 1, "maxLength": 1200}
    assert full["additionalProperties"] is False


# --- the papers' own output schemas -------------------------------------------------------------------

def test_conclusion_alignment_in_the_papers_nested_schema(tmp_path: Path) -> None:
    trace = board_trace(tmp_path)
    nested = {"conclusion_alignment": {"score": 4, "rationale": "Same plan, one condition lost."}}
    record, seen = judge_api(trace, "otb-conclusion-alignment", nested)
    [item] = record.items
    assert item.score == 4.0 and item.rationale == "Same plan, one condition lost." and len(record.calls) == 1
    # asked for in that schema (C.2 L178), score before rationale
    schema = seen[0].output_schema
    assert schema is not None and schema.json_schema is not None
    inner = schema.json_schema["properties"]["conclusion_alignment"]
    assert list(schema.json_schema["properties"]) == ["conclusion_alignment"]
    assert list(inner["properties"]) == ["score", "rationale"] and inner["required"] == ["score", "rationale"]
    task = seen[0].messages[0].content  # the authors' layout: the task is in the system message
    assert '{"conclusion_alignment": {"score": 1 | 2 | 3 | 4 | 5, "rationale": "..."}}' in task
    assert task.index("Give the score first") < task.index("Answer with one JSON object")
    # the flat layout, in either key order, reads to the same score
    for flat in ({"rationale": "r", "score": 4}, {"score": 4, "rationale": "r"}):
        other, _ = judge_api(trace, "otb-conclusion-alignment", flat)
        assert other.items[0].score == 4.0 and len(other.calls) == 1


def test_clinical_equivalence_asks_score_first_and_reads_the_papers_schema() -> None:
    from consilium.judges.answers import criterion_schema

    schema = criterion_schema(EQUIV)
    assert schema.json_schema is not None
    assert list(schema.json_schema["properties"]) == ["clinical_equivalence_score", "critical_error",
                                                      "unsupported_claim", "rationale"]  # C.1 L172
    paper = {"clinical_equivalence_score": 5, "critical_error": False, "unsupported_claim": True, "rationale": "r"}
    ours = {"rationale": "r", "score": 5, "critical_error": False, "unsupported_claim": True}
    assert schema.validate(json.dumps(paper)) == schema.validate(json.dumps(ours)) == {
        "rationale": "r", "score": 5, "critical_error": False, "unsupported_claim": True}
    with pytest.raises(OutputInvalid, match="rationale is empty"):
        schema.validate(json.dumps({**paper, "rationale": " \n\t"}))
    with pytest.raises(OutputInvalid, match="clinical_equivalence_score"):
        schema.validate(json.dumps({**paper, "clinical_equivalence_score": 6}))


@pytest.mark.parametrize("rationale", ["", "   \n"])
def test_a_blank_rationale_is_repaired_then_not_evaluable(tmp_path: Path, rationale: str) -> None:
    trace = board_trace(tmp_path)
    blank = {"conclusion_alignment": {"score": 4, "rationale": rationale}}
    record = judge_cli(tmp_path, trace, "otb-conclusion-alignment", blank, rc=1)
    [item] = record.items
    assert item.not_evaluable and item.score is None and item.reason
    assert item.reason.startswith("invalid judge output, also with the schema requested")  # a scripted judge
    assert len(record.calls) == 4 and "rationale" in record.calls[1].messages[-1].content
    # a repair that writes the rationale is read
    fixed = judge_cli(tmp_path / "f", board_trace(tmp_path / "f"), "otb-conclusion-alignment",
                      [blank, {"conclusion_alignment": {"score": 4, "rationale": "ok"}}])
    assert fixed.items[0].score == 4.0 and len(fixed.calls) == 2


def test_a_blank_rationale_leaves_the_four_decisions_not_evaluable(tmp_path: Path) -> None:
    record = judge_cli(tmp_path, board_trace(tmp_path), "otb-four-decision", answer(4, 2, 5, -1, rationale=" "),
                       rc=1)
    assert len(record.calls) == 4 and all(i.not_evaluable for i in record.items)
    assert record.aggregates["conclusion"]["weighted_mean"] is None


def test_a_dimension_left_invalid_says_in_which_decoding_order_it_was_asked(tmp_path: Path) -> None:
    trace = board_trace(tmp_path)
    bad = {**answer(3, 2, 4, -1), "next_action": "soon"}  # every attempt
    paper = judge_cli(tmp_path, trace, "otb-four-decision", bad, "--judge-decoding", "paper", "--force")
    constrained = judge_cli(tmp_path, trace, "otb-four-decision", bad, "--judge-decoding", "constrained", "--force")
    # paper: 1 + 2 schema-free attempts and 1 constrained; constrained: 1 + 2, every one under the schema
    assert (paper.decoding, len(paper.calls), constrained.decoding, len(constrained.calls)) == (
        "paper", 4, "constrained", 3)
    [was] = [i.reason or "" for i in paper.items if i.not_evaluable]
    [now] = [i.reason or "" for i in constrained.items if i.not_evaluable]
    # the scripted judge enforces no schema: the reason says it was only requested, not that decoding held it
    assert was.startswith("invalid judge output on this dimension, also with the schema requested (this backend "
                          "does not enforce it): ")
    assert now.startswith("invalid judge output on this dimension, with the schema requested from the first "
                          "attempt (this backend does not enforce it): ") and "next_action" in now
    assert {i.criterion: i.score for i in constrained.items} == {"therapy": 3.0, "surgery": 2.0,
                                                                 "next_action": None, "clinical_trial": -1.0}
