"""A component's scores from its judgement items, as the rubric's scoring kind computes them (kinds.py): one
function per kind, each applying the papers' formulas of scoring.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from consilium.judges.record import JudgementItem
from consilium.judges.rubric import Rubric
from consilium.judges.scoring import mean_score, pass_at_k, signed_score, weighted_decisions

__all__ = ["component_scores", "pass_at"]


def _mean(rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
    """AI Consilium: the mean of the per-output criteria, not-evaluable left out (ai-consilium.txt Fig. 7);
    the whole-case criteria apart."""
    per_criterion = [i for i in items if not i.detail.get("whole_case")]
    return {"mean": mean_score(i.score for i in per_criterion),
            "scores": {i.criterion: i.score for i in per_criterion},
            "whole_case": {i.criterion: i.score for i in items if i.detail.get("whole_case")}}


def _single(rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
    """One criterion, one score and its flags (opentumorboard.txt App. C.1, C.2)."""
    [item] = items
    return {"score": item.score, **item.flags}


def _weighted_decisions(rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
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


def _signed_criteria(rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
    """NPCBench: Eq. A7 over the criteria met, and the Eq. A8 error rates (npcbench.txt)."""
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


def _diagnosis_match(rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
    """Neural-MedBench: each candidate's match; pass@1 and pass@k over the ranked candidates."""
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


def _consistency(rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
    """The authors' consistency judge (training/verl_otb/reward.py, its consistency scores): ``consistency`` is
    discussion_conclusion_consistency / 5, the reward's term; ``plan`` the unweighted mean of s/5 over the
    decisions in scope; the judge's own ``match`` = (.45 plan + .25 quality/5 + .15 consistency/5 + .15
    grounding/5) × .7 where consistency ≤ 1 × .6 on a major contradiction × .3 on an unsafe addition."""
    scores = {i.criterion: i.score for i in items}
    flags = {name: value for i in items for name, value in i.flags.items()}
    decisions = [i for i in items if i.detail.get("decision")]
    in_scope = [i for i in decisions if not i.detail.get("locked")]
    whole = ("discussion_quality", "discussion_conclusion_consistency", "grounding_and_safety")
    known = not not_evaluable and all(scores.get(name) is not None for name in whole)
    out: dict[str, Any] = {"scores": scores, "scope": "frozen",
                           "locked": sorted(i.criterion for i in decisions if i.detail.get("locked")),
                           "in_scope": sorted(i.criterion for i in in_scope), **flags,
                           "plan": None, "consistency": None, "match": None}
    if not known:
        return out
    quality, consistency, grounding = (float(scores[name] or 0) / 5 for name in whole)
    plan = sum(float(i.score or 0) / 5 for i in in_scope) / len(in_scope) if in_scope else 0.0
    capped = float(scores[whole[1]] or 0) <= 1  # discussion_conclusion_consistency 0 or 1
    multiplier = (0.7 if capped else 1.0) * (0.6 if flags.get("major_contradiction") else 1.0) * \
        (0.3 if flags.get("unsafe_addition") else 1.0)
    raw = 0.45 * plan + 0.25 * quality + 0.15 * consistency + 0.15 * grounding
    return {**out, "plan": plan, "consistency": consistency, "match_raw": raw, "multiplier": multiplier,
            "match": raw * multiplier}


def pass_at(ranked: list[JudgementItem], matches: list[bool], k: int) -> bool | None:
    """pass@k when the first k candidates decide it: a match among them, or all of them judged without
    one; None when a candidate there is not evaluable and no match comes before it (a judge failure
    is not a miss)."""
    if not matches:
        return None
    if pass_at_k(matches, k):
        return True
    return False if all(i.score is not None for i in ranked[:k]) else None


#: Each scoring kind's scores, by its name (kinds.py).
_SCORES: dict[str, Callable[[Rubric, list[JudgementItem], int, int], dict[str, Any]]] = {
    "mean": _mean, "single": _single, "weighted_decisions": _weighted_decisions,
    "signed_criteria": _signed_criteria, "diagnosis_match": _diagnosis_match, "consistency": _consistency}


def component_scores(rubric: Rubric, items: list[JudgementItem], not_evaluable: int, k: int) -> dict[str, Any]:
    """A component's scores from its items (``not_evaluable`` of them not evaluable); ``k``: the judge's k."""
    return _SCORES[rubric.kind.name](rubric, items, not_evaluable, k)
