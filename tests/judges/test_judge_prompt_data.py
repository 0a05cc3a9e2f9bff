"""The judge's sentences and fixed schemas are data now (prompts/sentences.yaml, judges/answers.py); what
the judge is sent stays byte for byte what the code wrote inline before, so cached answers
and recorded calls still match. Each expected text below is built from a literal copy of that code."""

from __future__ import annotations

import json
from typing import Any

import pytest

from consilium.judges.answers import (
    MATCH,
    SIGNED,
    CriterionMet,
    DiagnosisMatch,
    closed_object_schema,
    criterion_shape,
    decisions_shape,
)
from consilium.judges.prompting import (
    anchors_text,
    criterion_task,
    decisions_task,
    diagnosis_task,
    judge_messages,
    judge_sentences,
    load_judge_prompt,
    signed_task,
    whole_case_task,
)
from consilium.judges.rubric import Criterion, Rubric, builtin_rubric_names, load_rubric

# --- literal copies of the text the judge code wrote inline (consilium/judges/runner.py, prompting.py) -----

OLD_SIGNED = {
    "type": "object", "additionalProperties": False, "required": ["explanation", "criteria_met"],
    "properties": {"explanation": {"type": "string", "maxLength": 1000}, "criteria_met": {"type": "boolean"}}}
OLD_MATCH = {
    "type": "object", "additionalProperties": False, "required": ["rationale", "match"],
    "properties": {"rationale": {"type": "string", "maxLength": 600}, "match": {"type": "boolean"}}}


def old_criterion_task(rubric: Rubric, criterion: Criterion) -> str:
    flags = "".join(f"\nAlso report {f.id}: {f.definition}" for f in rubric.flags)
    template = "criterion_score_first" if rubric.answer.score_first else "criterion"
    return load_judge_prompt(template).format(
        component="{component}", criterion_name=criterion.name, criterion_definition=criterion.definition,
        anchors=anchors_text(rubric, criterion), flags=flags, rationale_max_chars=rubric.rationale_max_chars,
        rationale_required="; the rationale must not be empty" if rubric.answer.rationale_required else "",
        not_evaluable=(' If the text gives you nothing to judge this criterion on, answer "not_evaluable" as the '
                       "score and say why in the rationale.") if rubric.not_evaluable else "",
        output_shape=criterion_shape(rubric))


def old_decisions_task(rubric: Rubric, component: str, scope: str, locked: frozenset[str]) -> str:
    dimensions = "\n".join(f"- {c.id} ({c.name}): {c.definition.strip()}" for c in rubric.criteria_for(component))
    if scope == "frozen":
        fixed = ", ".join(c.id for c in rubric.criteria if c.id in locked)
        scope_text = ("Scope was fixed beforehand by a candidate-blind reading of the reference conclusion: "
                      + (f"the dimensions it leaves absent are locked to -1 ({fixed})." if fixed else
                         "it leaves no dimension absent."))
    else:
        scope_text = "Decide each dimension's scope from the reference conclusion alone, before reading the candidate."
    return load_judge_prompt("four_decision").format(
        component=component, dimensions=dimensions, anchors=anchors_text(rubric, rubric.criteria[0]),
        scope=scope_text, rationale_max_chars=rubric.rationale_max_chars,
        output_shape=decisions_shape(rubric, locked, scope == "frozen"))


def old_signed_task(component: str, kind: str, weight: float) -> str:
    note = ("criteria_met is true when the candidate makes this error." if kind != "requirement"
            else "criteria_met is true when the candidate satisfies this requirement.")
    return load_judge_prompt("signed_criterion").format(
        component=component, criterion_kind=kind.replace("_", " "), criterion_weight=f"{weight:g}",
        criterion_note=note)


def old_preamble(rubric: Rubric) -> str:
    rules = "\n".join(f"- {rule}" for rule in rubric.rules)
    return load_judge_prompt("preamble").format(rubric_title=rubric.title, instructions=rubric.instructions.strip(),
                                                rules=f"Rules:\n{rules}" if rules else "")


# --- the same bytes from the data ----------------------------------------------------------------------

RUBRICS = [load_rubric(name) for name in builtin_rubric_names()]


@pytest.mark.parametrize(("schema", "model", "old"), [(SIGNED, CriterionMet, OLD_SIGNED),
                                                      (MATCH, DiagnosisMatch, OLD_MATCH)])
def test_fixed_answer_schemas_are_the_same_json_in_the_same_order(schema: Any, model: Any, old: Any) -> None:
    assert schema.name == model.__name__
    # Key order matters: a grammar (llama.cpp) and a response_format are built from it as it stands.
    assert json.dumps(schema.json_schema) == json.dumps(old)
    assert json.dumps(closed_object_schema(model)) == json.dumps(old)


@pytest.mark.parametrize("rubric", RUBRICS, ids=lambda r: r.name)
def test_criterion_and_preamble_texts_are_unchanged(rubric: Rubric) -> None:
    system, _ = judge_messages(rubric, "case", "reference", "candidate", "task")
    assert system.content == old_preamble(rubric)
    for criterion in rubric.criteria:
        for component in criterion.components:
            old = old_criterion_task(rubric, criterion).replace("{component}", component)
            assert criterion_task(rubric, criterion, component) == old
            assert whole_case_task(rubric, criterion, component) == \
                f"{load_judge_prompt('whole_case')}\n\n{old_criterion_task(rubric, criterion)}".replace(
                    "{component}", component)


def test_a_rubric_with_flags_and_no_rules_renders_as_before() -> None:
    """Flags and the not-evaluable sentence, and a preamble without rules, which no shipped rubric has together."""
    base = load_rubric("otb-clinical-equivalence")
    data = base.model_dump() | {"not_evaluable": True, "rules": [], "scale": [0, 1, 2],
                                "criteria": [base.criteria[0].model_dump() | {"anchors": {}}]}
    rubric = Rubric.model_validate(data)
    assert rubric.flags and rubric.answer.rationale_required
    system, _ = judge_messages(rubric, "case", None, "candidate", "task")
    assert system.content == old_preamble(rubric)
    criterion = rubric.criteria[0]
    assert criterion_task(rubric, criterion, "answer") == \
        old_criterion_task(rubric, criterion).replace("{component}", "answer")


@pytest.mark.parametrize(("scope", "locked"), [("frozen", frozenset()), ("frozen", frozenset({"surgery"})),
                                               ("frozen", frozenset({"surgery", "clinical_trial"})),
                                               ("judge", frozenset())])
def test_four_decision_texts_are_unchanged(scope: Any, locked: frozenset[str]) -> None:
    rubric = load_rubric("otb-four-decision")
    assert decisions_task(rubric, "conclusion", scope, locked) == old_decisions_task(rubric, "conclusion", scope,
                                                                                      locked)


def test_signed_and_diagnosis_texts_are_unchanged() -> None:
    for kind in ("requirement", "major_error", "minor_error"):
        for weight in (1.0, 2.5, 3):
            assert signed_task("conclusion", kind, weight) == old_signed_task("conclusion", kind, weight)
    rubric = load_rubric("nmb-diagnosis-match")
    rules = " ".join(rubric.rules)
    template = load_judge_prompt("diagnosis")
    assert diagnosis_task(rubric) == template.format(which="the candidate's final conclusion", rules=rules)
    assert diagnosis_task(rubric, 1, leading=True) == template.format(
        which="ranked 1" + ", the most likely diagnosis", rules=rules)
    assert diagnosis_task(rubric, 3) == template.format(which="ranked 3", rules=rules)
    assert judge_sentences().turn_role.format(role="Neuroradiologist", category="radiology") == \
        f"{'Neuroradiologist'} (catalogue category: {'radiology'})"
