"""Each rubric ``scoring`` kind as one strategy object: which calls a component needs, how an answer
becomes an item, and how a component's items become its scores (the formulas of scoring.py).

* ``mean`` (AI Consilium) and ``single`` (OpenTumorBoard C.1, C.2): one call per criterion, a score
  and flags each; ``mean`` averages the per-output criteria, ``single`` reports its one score.
* ``weighted_decisions`` (OpenTumorBoard C.3): one call, four scores, one item per dimension.
* ``signed_criteria`` (NPCBench): one call per criterion of the case's own rubric, met or not.
* ``diagnosis_match`` (Neural-MedBench): one call per candidate diagnosis, match or not; pass@k.

A new kind is a subclass here, a line in :data:`KINDS` and its name in
:data:`consilium.judges.rubric.Scoring`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any, ClassVar

from consilium.graphs.registry import protocol_of
from consilium.judges.answers import criterion_schema, decision_scope, decisions_schema, partial_decisions
from consilium.judges.components import ranked_candidates
from consilium.judges.prompting import judge_messages
from consilium.judges.record import JudgementItem
from consilium.judges.rubric import COMPONENTS, Rubric, Scoring
from consilium.judges.schemas import MATCH, SIGNED, CriterionMet, DiagnosisMatch
from consilium.judges.scoring import mean_score, pass_at_k, signed_score, weighted_decisions
from consilium.judges.task_text import (
    criterion_task,
    decisions_task,
    diagnosis_task,
    signed_task,
    turn_inputs,
    whole_case_task,
)
from consilium.judges.tasks import JudgeInputs, JudgeTask, SharedCall
from consilium.judges.whole_case import fit_whole_case
from consilium.models.tokens import context_window

__all__ = ["KINDS", "ScoringKind", "pass_at", "scoring_kind"]


class ScoringKind:
    """What a scoring kind decides; the defaults are the per-criterion rubrics'."""

    name: ClassVar[Scoring]
    #: Whether a case without the rubric's reference is not evaluable (else judged against the case alone).
    needs_reference: ClassVar[bool] = True
    #: Whether the criteria are the case's own (``reference.rubric``), not the rubric file's.
    criteria_from_case: ClassVar[bool] = False
    #: Whether ``--scope`` (the four-decision scope protocols) applies.
    takes_scope: ClassVar[bool] = False
    #: Whether each criterion has instructions of its own that ``calibrate evolve`` can rewrite.
    evolvable: ClassVar[bool] = True

    def components(self, rubric: Rubric) -> list[str]:
        """The components the rubric scores, in :data:`COMPONENTS` order."""
        return [c for c in COMPONENTS if any(c in crit.components for crit in rubric.criteria)]

    def tasks(self, inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
        raise NotImplementedError

    def read(self, task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
        """An item from the validated answer, in the canonical shape of :mod:`consilium.judges.answers`;
        ``error``: for an answer salvaged in part, how it was asked and what stayed invalid (else empty)."""
        raise NotImplementedError

    def aggregate(self, rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
        """A component's scores from its items (``not_evaluable`` of them not evaluable)."""
        raise NotImplementedError


def _base(task: JudgeTask) -> dict[str, Any]:
    return {"component": task.component, "criterion": task.criterion, "detail": task.detail}


class _PerCriterion(ScoringKind):
    """One call per criterion of the rubric, answered with a score (or not evaluable) and its flags."""

    def tasks(self, inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
        rubric, trace = inputs.rubric, inputs.trace
        schema = criterion_schema(rubric)
        criteria = rubric.criteria_for(component)
        extra, note, about = turn_inputs(trace, inputs.case, inputs.reference_answer) if component == "answer" \
            else ((), "", {})
        # ai-consilium.txt Table 29 (L260): the whole-case scores are judged on every stage; the record
        # is fitted once, to the longest of their tasks, so the three see the same one.
        whole = {c.id: whole_case_task(rubric, c, component) for c in criteria if c.whole_case}
        stages = protocol_of(trace).whole_case_record(trace) if whole and trace is not None else []
        if stages:
            sections, record = fit_whole_case(
                stages, partial(judge_messages, rubric, inputs.case_text, inputs.reference, text,
                                max(whole.values(), key=len)),
                context_window(inputs.model), inputs.settings.max_tokens, inputs.max_repairs)
            unfit = None if record["fits"] is not False else (
                f"the whole case does not fit the judge's context of {record['context_tokens']} tokens even "
                f"with the earlier stages shortened (about {record['prompt_tokens_estimate']} prompt tokens, "
                f"room for {record['prompt_room']})")
        tasks = []
        for criterion in criteria:
            detail = {"weight": criterion.weight, "whole_case": criterion.whole_case, **about}
            if criterion.id in whole and stages:
                tasks.append(replace(inputs.task(component, criterion.id, text, whole[criterion.id], schema,
                                                 {**detail, "whole_case_input": record}, sections), unfit=unfit))
            elif criterion.id in whole and trace is not None:
                # A protocol without a deliberation (the single-specialist baseline) has no record to judge
                # the whole case on: not evaluable, unsent, rather than judged on the answer alone.
                name = protocol_of(trace).name
                tasks.append(replace(inputs.task(component, criterion.id, text, whole[criterion.id], schema, detail),
                                     unfit=f"the {name} trace has no deliberation record (panel, opinions, report "
                                           "versions, review rounds) to judge the whole case on"))
            else:
                tasks.append(inputs.task(component, criterion.id, text,
                                         note + criterion_task(rubric, criterion, component), schema, detail, extra))
        return tasks

    def read(self, task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
        flags = {k: v for k, v in parsed.items() if isinstance(v, bool)}
        if parsed["score"] == "not_evaluable":
            return JudgementItem(**_base(task), score=None, not_evaluable=True,
                                 reason="the judge found it not evaluable", rationale=parsed["rationale"], flags=flags)
        return JudgementItem(**_base(task), score=float(parsed["score"]), rationale=parsed["rationale"], flags=flags)


class MeanScoring(_PerCriterion):
    """AI Consilium: the mean of the per-output criteria, not-evaluable left out (ai-consilium.txt Fig. 7);
    the whole-case criteria apart. Judged against the case: the reference informs one criterion only."""

    name = "mean"
    needs_reference = False

    def aggregate(self, rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
        per_criterion = [i for i in items if not i.detail.get("whole_case")]
        return {"mean": mean_score(i.score for i in per_criterion),
                "scores": {i.criterion: i.score for i in per_criterion},
                "whole_case": {i.criterion: i.score for i in items if i.detail.get("whole_case")}}


class SingleScoring(_PerCriterion):
    """One criterion, one score and its flags (opentumorboard.txt App. C.1, C.2)."""

    name = "single"

    def aggregate(self, rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
        [item] = items
        return {"score": item.score, **item.flags}


class WeightedDecisionsScoring(ScoringKind):
    """The four-decision rubric (opentumorboard.txt App. C.3, E.2): one call, one item per dimension."""

    name = "weighted_decisions"
    takes_scope = True

    def tasks(self, inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
        # One call, one schema for the four scores (opentumorboard.txt App. C.3 L186); one item each.
        rubric, case = inputs.rubric, inputs.case
        scope, locked = decision_scope(inputs.scope, case, f"case {case.id}")
        call = inputs.task(component, "decisions", text, decisions_task(rubric, component, scope, locked),
                           decisions_schema(rubric, locked, scope == "frozen"), {})
        once = SharedCall(partial_decisions(rubric, locked, scope == "frozen"))
        return [replace(call, criterion=c.id, once=once, detail={
            "weight": c.weight, "scope": scope, "locked": c.id in locked}) for c in rubric.criteria_for(component)]

    def read(self, task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
        base = _base(task)
        score = parsed["scores"][task.criterion]
        if task.criterion in parsed["ignored"]:  # a locked dimension: the judge's answer there is not read
            base["detail"] = {**task.detail, "ignored_answer": parsed["ignored"][task.criterion]}
        if score is None:  # salvaged: this dimension stayed invalid, the others are read
            return JudgementItem(**base, score=None, not_evaluable=True, rationale=parsed["rationale"],
                                 reason=f"invalid judge output on this dimension, {error}")
        return JudgementItem(**base, score=float(score), rationale=parsed["rationale"])

    def aggregate(self, rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
        """App. E.2 L194: Σ w·(s/5) / Σ w over the dimensions in scope. ``scope`` is the protocol used
        (frozen: ``locked`` were fixed at −1 from the case's labelling; judge: the judge decided); a
        dimension not evaluable enters neither sum, as one out of scope does, and is listed apart, so it
        never voids the others; ``in_scope`` is the dimensions the mean is over."""
        weights = {c.id: c.weight for c in rubric.criteria}
        scores = {i.criterion: i.score for i in items}
        judged = {name: int(s) for name, s in scores.items() if s is not None}
        scopes = sorted({str(i.detail["scope"]) for i in items if "scope" in i.detail})
        return {"scores": scores, "scope": scopes[0] if len(scopes) == 1 else None,
                "locked": sorted(i.criterion for i in items if i.detail.get("locked")),
                "in_scope": sorted(name for name, s in judged.items() if s != -1),
                "not_evaluable_dimensions": sorted(i.criterion for i in items
                                                   if i.score is None and i.criterion in weights),
                "weighted_mean": weighted_decisions(judged, weights)}


class SignedCriteriaScoring(ScoringKind):
    """NPCBench: each criterion of the case's own rubric met or not; Eq. A7 and the Eq. A8 error rates."""

    name = "signed_criteria"
    criteria_from_case = True
    evolvable = False

    def components(self, rubric: Rubric) -> list[str]:
        return ["conclusion", "answer"]

    def tasks(self, inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
        case = inputs.case
        # The criterion is case text: it goes in its own data section, never in the task.
        return [inputs.task(component, crit.id, text, signed_task(component, crit.kind, crit.weight), SIGNED,
                            {"kind": crit.kind, "weight": crit.weight}, (("criterion", crit.text),))
                for crit in (case.reference.rubric if case.reference else [])]

    def read(self, task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
        answer = CriterionMet.model_validate(parsed)
        return JudgementItem(**_base(task), score=1.0 if answer.criteria_met else 0.0, rationale=answer.explanation)

    def aggregate(self, rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
        met = [i for i in items if i.score == 1.0]
        requirements = [i.detail["weight"] for i in met if i.detail["kind"] == "requirement"]
        majors = sum(1 for i in met if i.detail["kind"] == "major_error")
        minors = sum(1 for i in met if i.detail["kind"] == "minor_error")
        majors_total = sum(1 for i in items if i.detail.get("kind") == "major_error")
        minors_total = sum(1 for i in items if i.detail.get("kind") == "minor_error")
        # Eq. A8: an error rate is the share of responses with at least one error of that severity, so
        # each response contributes whether it has one; both Eq. A7 and A8 run over V, the responses with
        # a valid judgement for every criterion, so one not evaluable has neither.
        evaluable = not not_evaluable
        return {"score": signed_score(requirements, majors, minors) if evaluable else None,
                "majors_present": majors, "majors_total": majors_total, "minors_present": minors,
                "minors_total": minors_total, "has_major_error": majors > 0 if evaluable else None,
                "has_minor_error": minors > 0 if evaluable else None}


class DiagnosisMatchScoring(ScoringKind):
    """Neural-MedBench: each candidate diagnosis matches the reference or not; pass@1 and pass@k."""

    name = "diagnosis_match"
    evolvable = False

    def tasks(self, inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
        rubric = inputs.rubric
        if component != "differential":
            return [inputs.task(component, "final_conclusion", text, diagnosis_task(rubric), MATCH,
                                {"rank": 1, "candidate": text})]
        # pass@1 is the leading diagnosis, pass@k adds the differential (neural-medbench.txt L249, L403).
        return [inputs.task(component, f"rank_{rank}", item, diagnosis_task(rubric, rank, source == "final_opinion"),
                            MATCH, {"rank": rank, "candidate": item, "source": source})
                for rank, (source, item) in enumerate(ranked_candidates(inputs.leading, text, inputs.k), 1)]

    def read(self, task: JudgeTask, parsed: dict[str, Any], error: str) -> JudgementItem:
        answer = DiagnosisMatch.model_validate(parsed)
        return JudgementItem(**_base(task), score=1.0 if answer.match else 0.0, rationale=answer.rationale)

    def aggregate(self, rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
        ranked = sorted(items, key=lambda i: i.detail.get("rank", 1))
        matches = [i.score == 1.0 for i in ranked]
        if items and items[0].criterion.startswith("rank_"):
            # pass@k is labelled with the k the candidates reach: pass@5 of three candidates would be
            # pass@3 under another name. ``k`` is the judge's k (``--k``), ``ranked`` the candidates judged.
            reach = min(k, len(ranked))
            deeper = {f"pass@{reach}": pass_at(ranked, matches, reach)} if reach > 1 else {}
            return {"matches": matches, "k": k, "ranked": len(ranked), "pass@1": pass_at(ranked, matches, 1),
                    **deeper}
        return {"matches": matches, "match": matches[0] if matches and not not_evaluable else None}


def pass_at(ranked: list[JudgementItem], matches: list[bool], k: int) -> bool | None:
    """pass@k when the first k candidates decide it: a match among them, or all of them judged without
    one; None when a candidate there is not evaluable and no match comes before it (a judge failure
    is not a miss)."""
    if not matches:
        return None
    if pass_at_k(matches, k):
        return True
    return False if all(i.score is not None for i in ranked[:k]) else None


#: Every scoring kind by the name a rubric's ``scoring`` gives.
KINDS: dict[str, ScoringKind] = {kind.name: kind for kind in (
    MeanScoring(), SingleScoring(), WeightedDecisionsScoring(), SignedCriteriaScoring(), DiagnosisMatchScoring())}


def scoring_kind(name: str) -> ScoringKind:
    return KINDS[name]
