"""From judge items to each component's score, by the rubric's scoring kind (kinds.py); text-overlap
metrics; the summary across judged traces."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from consilium.cases import Case
from consilium.judges.components import TurnReference
from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import Rubric
from consilium.judges.scoring import wilson_interval
from consilium.judges.similarity import semantic_similarity

__all__ = ["aggregate", "overlap_metrics", "summarise"]


def _by_component(items: list[JudgementItem]) -> dict[str, list[JudgementItem]]:
    groups: dict[str, list[JudgementItem]] = {}
    for item in items:
        groups.setdefault(item.component, []).append(item)
    return groups


def _component(rubric: Rubric, items: list[JudgementItem], k: int) -> dict[str, Any]:
    not_evaluable = sum(i.not_evaluable for i in items)
    return {"items": len(items), "not_evaluable": not_evaluable,
            **rubric.kind.aggregate(rubric, items, not_evaluable, k)}


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
    """Across judged traces, per (protocol, variant, component): the mean of each numeric aggregate and, for
    each yes/no aggregate (match, pass@k, has_major_error…), the rate with its 95 % Wilson interval. A
    consilium's and a single specialist's free-form answers are never pooled."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for judgement in judgements:
        for component, summary in judgement.aggregates.items():
            protocol = getattr(judgement, "trace_kind", None) or "-"  # a record built unvalidated may lack it
            groups.setdefault((protocol, judgement.variant or "-", component), []).append(summary)
    rows = []
    for (protocol, variant, component), summaries in sorted(groups.items()):
        row: dict[str, Any] = {"protocol": protocol, "variant": variant, "component": component, "n": len(summaries),
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
