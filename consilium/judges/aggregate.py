"""From judge items to each component's score, by the rubric's scoring rule; text-overlap metrics."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from consilium.cases import Case
from consilium.judges.components import TurnReference
from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import Rubric
from consilium.judges.scoring import mean_score, pass_at_k, signed_score, weighted_decisions, wilson_interval
from consilium.judges.similarity import semantic_similarity

__all__ = ["aggregate", "overlap_metrics", "summarise"]


def _by_component(items: list[JudgementItem]) -> dict[str, list[JudgementItem]]:
    groups: dict[str, list[JudgementItem]] = {}
    for item in items:
        groups.setdefault(item.component, []).append(item)
    return groups


def _component(rubric: Rubric, items: list[JudgementItem], k: int) -> dict[str, Any]:
    not_evaluable = sum(i.not_evaluable for i in items)
    result: dict[str, Any] = {"items": len(items), "not_evaluable": not_evaluable}
    if rubric.scoring == "mean":
        per_criterion = [i for i in items if not i.detail.get("whole_case")]
        result["mean"] = mean_score(i.score for i in per_criterion)
        result["scores"] = {i.criterion: i.score for i in per_criterion}
        result["whole_case"] = {i.criterion: i.score for i in items if i.detail.get("whole_case")}
    elif rubric.scoring == "single":
        [item] = items
        result["score"] = item.score
        result.update(item.flags)
    elif rubric.scoring == "weighted_decisions":
        result.update(_decisions(rubric, items))
    elif rubric.scoring == "signed_criteria":
        met = [i for i in items if i.score == 1.0]
        requirements = [i.detail["weight"] for i in met if i.detail["kind"] == "requirement"]
        majors = sum(1 for i in met if i.detail["kind"] == "major_error")
        minors = sum(1 for i in met if i.detail["kind"] == "minor_error")
        majors_total = sum(1 for i in items if i.detail.get("kind") == "major_error")
        minors_total = sum(1 for i in items if i.detail.get("kind") == "minor_error")
        result["score"] = signed_score(requirements, majors, minors) if not not_evaluable else None
        # Eq. A8: an error rate is the share of responses with at least one error of that
        # severity, so each response contributes whether it has one; both Eq. A7 and A8 run over
        # V, the responses with a valid judgement for every criterion, so one not evaluable has neither.
        evaluable = not not_evaluable
        result.update(majors_present=majors, majors_total=majors_total, minors_present=minors,
                      minors_total=minors_total, has_major_error=majors > 0 if evaluable else None,
                      has_minor_error=minors > 0 if evaluable else None)
    elif rubric.scoring == "diagnosis_match":
        ranked = sorted(items, key=lambda i: i.detail.get("rank", 1))
        matches = [i.score == 1.0 for i in ranked]
        result["matches"] = matches
        if items and items[0].criterion.startswith("rank_"):
            result["pass@1"] = _pass_at(ranked, matches, 1)
            result[f"pass@{k}"] = _pass_at(ranked, matches, k)
        else:
            result["match"] = matches[0] if matches and not not_evaluable else None
    return result


def _decisions(rubric: Rubric, items: list[JudgementItem]) -> dict[str, Any]:
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


def _pass_at(ranked: list[JudgementItem], matches: list[bool], k: int) -> bool | None:
    """pass@k when the first k candidates decide it: a match among them, or all of them judged without
    one; None when a candidate there is not evaluable and no match comes before it (a judge failure
    is not a miss)."""
    if not matches:
        return None
    if pass_at_k(matches, k):
        return True
    return False if all(i.score is not None for i in ranked[:k]) else None


def aggregate(rubric: Rubric, items: list[JudgementItem], k: int) -> dict[str, dict[str, Any]]:
    return {component: _component(rubric, group, k) for component, group in _by_component(items).items()}


@lru_cache(maxsize=1)
def _rouge() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def overlap_metrics(case: Case, texts: dict[str, str], answer: TurnReference | None = None) -> dict[str, Any]:
    """ROUGE-L F1 (the ``rouge-score`` package, Porter stemming) and the embedding similarity of
    :mod:`similarity` (not BERTScore) of a conclusion against the case's reference conclusion
    (opentumorboard.txt §2.4 L58), or of a Specialist Turn's answer against its own reference answer
    (``answer``, from :func:`turn_reference`), never against the board's conclusion; none without one."""
    if "answer" in texts:
        candidate: str | None = texts["answer"]
        reference: str | None = answer.text if answer else None
        against = answer.source if answer else ""
    else:
        candidate = texts.get("conclusion")
        reference, against = (case.reference.conclusion if case.reference else None), "reference.conclusion"
    if not reference or not candidate:
        return {}
    score = _rouge().score(reference, candidate)["rougeL"]
    return {"rouge_l": {"f1": round(score.fmeasure, 6), "precision": round(score.precision, 6),
                        "recall": round(score.recall, 6), "against": against,
                        "package": "rouge-score (Porter stemmer)"},
            "semantic_similarity": {**semantic_similarity(reference, candidate), "against": against}}


def summarise(judgements: list[Judgement]) -> list[dict[str, Any]]:
    """Across judged traces, per (variant, component): the mean of each numeric aggregate and, for
    each yes/no aggregate (match, pass@k, has_major_error…), the rate with its 95 % Wilson interval."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for judgement in judgements:
        for component, summary in judgement.aggregates.items():
            groups.setdefault((judgement.variant or "-", component), []).append(summary)
    rows = []
    for (variant, component), summaries in sorted(groups.items()):
        row: dict[str, Any] = {"variant": variant, "component": component, "n": len(summaries),
                               "not_evaluable": sum(s.get("not_evaluable", 0) for s in summaries)}
        keys = sorted({k for s in summaries for k, v in s.items() if k not in ("items", "not_evaluable")})
        for key in keys:
            values = [s.get(key) for s in summaries]
            if all(isinstance(v, bool) or v is None for v in values) and any(isinstance(v, bool) for v in values):
                known = [v for v in values if isinstance(v, bool)]
                low, high = wilson_interval(sum(known), len(known))
                row[key] = {"rate": sum(known) / len(known), "n": len(known), "wilson95": [round(low, 4),
                                                                                          round(high, 4)]}
            elif all((isinstance(v, int | float) and not isinstance(v, bool)) or v is None for v in values):
                numbers = [float(v) for v in values if v is not None]
                row[key] = {"mean": sum(numbers) / len(numbers) if numbers else None, "n": len(numbers)}
        rows.append(row)
    return rows
