"""The task a judge call ends with: a prompt template (prompts/*.md) filled with the rubric's words and
the short sentences of prompts/sentences.yaml. Only this project's text goes in a task; model and case
text travel as data sections (:func:`consilium.judges.prompting.judge_messages`)."""

from __future__ import annotations

from typing import Any

from consilium.cases import Case
from consilium.graphs.registry import protocol_of
from consilium.judges.answers import Scope, criterion_shape, decisions_shape
from consilium.judges.components import turn_reference
from consilium.judges.prompting import anchors_text, judge_sentences, load_judge_prompt
from consilium.judges.rubric import Criterion, Rubric
from consilium.traces.schema import TraceBase

__all__ = ["criterion_task", "decisions_task", "diagnosis_task", "signed_task", "turn_inputs", "whole_case_task"]

Sections = tuple[tuple[str, str], ...]


def criterion_task(rubric: Rubric, criterion: Criterion, component: str) -> str:
    """One criterion's task (criterion.md; score first where the paper asks it, App. C.1 L172, C.2 L178)."""
    said = judge_sentences()
    flags = "".join(said.flag.format(id=f.id, definition=f.definition) for f in rubric.flags)
    template = "criterion_score_first" if rubric.answer.score_first else "criterion"
    # The component goes in last, by replacement, so a "{component}" in the rubric's text reads as it did.
    return load_judge_prompt(template).format(
        component="{component}", criterion_name=criterion.name, criterion_definition=criterion.definition,
        anchors=anchors_text(rubric, criterion), flags=flags, rationale_max_chars=rubric.rationale_max_chars,
        rationale_required=said.rationale_required if rubric.answer.rationale_required else "",
        not_evaluable=said.not_evaluable if rubric.not_evaluable else "",
        output_shape=criterion_shape(rubric)).replace("{component}", component)


def whole_case_task(rubric: Rubric, criterion: Criterion, component: str) -> str:
    """A whole-case criterion's task: what the record's sections are (whole_case.md), then the criterion."""
    return f"{load_judge_prompt('whole_case')}\n\n{criterion_task(rubric, criterion, component)}"


def decisions_task(rubric: Rubric, component: str, scope: Scope, locked: frozenset[str]) -> str:
    """The four-decision task (opentumorboard.txt App. C.3 L184): every dimension in one answer."""
    said = judge_sentences()
    dimensions = "\n".join(said.dimension.format(id=c.id, name=c.name, definition=c.definition.strip())
                           for c in rubric.criteria_for(component))
    if scope == "frozen":
        fixed = ", ".join(c.id for c in rubric.criteria if c.id in locked)
        scope_text = said.scope_frozen + (said.scope_frozen_locked.format(locked=fixed) if fixed else
                                          said.scope_frozen_none)
    else:
        scope_text = said.scope_judge
    return load_judge_prompt("four_decision").format(
        component=component, dimensions=dimensions, anchors=anchors_text(rubric, rubric.criteria[0]),
        scope=scope_text, rationale_max_chars=rubric.rationale_max_chars,
        output_shape=decisions_shape(rubric, locked, scope == "frozen"))


def signed_task(component: str, kind: str, weight: float) -> str:
    """One case criterion's task (npcbench.txt); the criterion itself is case text, sent as a section."""
    said = judge_sentences()
    return load_judge_prompt("signed_criterion").format(
        component=component, criterion_kind=kind.replace("_", " "), criterion_weight=f"{weight:g}",
        criterion_note=said.signed_requirement if kind == "requirement" else said.signed_error)


def diagnosis_task(rubric: Rubric, rank: int | None = None, leading: bool = False) -> str:
    """Whether one candidate diagnosis matches: the final conclusion's (``rank`` None) or the ``rank``-th
    of the differential, the leading diagnosis first (neural-medbench.txt L249, L403)."""
    said = judge_sentences()
    which = said.diagnosis_final if rank is None else \
        said.diagnosis_ranked.format(rank=rank) + (said.diagnosis_leading if leading else "")
    return load_judge_prompt("diagnosis").format(which=which, rules=" ".join(rubric.rules))


def turn_inputs(trace: TraceBase | None, case: Case, given: str | None) \
        -> tuple[Sections, str, dict[str, Any]]:
    """A Specialist Turn's question and target role as data sections, the task's note on them, and the
    item detail naming the reference answer used (opentumorboard.txt App. C.1 L170: the judge is given
    "the supplied case evidence, question, target specialist role, and reference expert answer")."""
    asked = protocol_of(trace).question(trace) if trace is not None else None
    if trace is None or asked is None:
        return (), "", {}
    question, role_label, category = asked
    answer = turn_reference(trace, case, given)
    role = judge_sentences().turn_role.format(role=role_label, category=category)
    return ((("question", question), ("role", role)),
            load_judge_prompt("turn") + "\n\n", {"reference_answer": answer.source if answer else None})
