"""Neural-MedBench's diagnostic accuracy (neural-medbench.txt, Evaluation Metrics; Confidence
Intervals): pass@1 and pass@k per model and variant, each with its 95 % Wilson score interval."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from consilium.judges.record import JudgementItem
from consilium.reports.papers.responses import Response, by_component, group
from consilium.reports.papers.stats import rate, wilson

__all__ = ["RUBRIC", "outcome", "pass_at_k_table"]

RUBRIC = "nmb-diagnosis-match"


def _k(response: Response, component: str, ranks: int) -> int:
    """The judge's k (``judge --k``), from the record's ``pass@k`` key; the ranks judged otherwise."""
    keys = [int(key[5:]) for key in response.aggregates.get(component, {}) if key.startswith("pass@")]
    return max(keys, default=ranks)


def outcome(items: list[JudgementItem], k: int) -> bool | None:
    """pass@k of one response: True when one of its first k ranked candidates was judged a match,
    False when all of them were judged and none matched, None when that is undetermined (a candidate
    not evaluable and no match before it) or there is nothing to judge."""
    ranked = sorted((i for i in items if i.criterion.startswith("rank_")), key=lambda i: int(i.criterion[5:]))[:k]
    if not ranked:
        return None
    if any(i.score == 1.0 for i in ranked):
        return True
    return False if all(i.score is not None for i in ranked) else None


def pass_at_k_table(responses: list[Response]) -> list[dict[str, Any]]:
    """Per model, variant, component and metric: cases whose outcome is known, how many pass, the
    accuracy and its Wilson interval, and how many were not evaluable. The ``conclusion`` component's
    one candidate (the final conclusion) gives pass@1; the ``differential`` component's ranked
    candidates give pass@1 (rank 1) and pass@k (any of ranks 1..k)."""
    tallies: dict[tuple[str, str, str, str, int], list[bool | None]] = defaultdict(list)
    for (model, variant), group_responses in group(responses, RUBRIC).items():
        for response in group_responses:
            for component, items in by_component(response).items():
                if component == "differential":
                    k = _k(response, component, sum(i.criterion.startswith("rank_") for i in items))
                    tallies[(model, variant, component, "pass@1", 1)].append(outcome(items, 1))
                    if k > 1:
                        tallies[(model, variant, component, f"pass@{k}", k)].append(outcome(items, k))
                else:
                    judged = [i.score == 1.0 if i.score is not None else None for i in items
                              if i.criterion == "final_conclusion"]
                    tallies[(model, variant, component, "pass@1", 1)].append(judged[0] if judged else None)
    rows = []
    for (model, variant, component, metric, k), outcomes in sorted(tallies.items(), key=lambda t: (t[0][:3], t[0][4])):
        known = [o for o in outcomes if o is not None]
        low, high = wilson(sum(known), len(known))
        rows.append({"model": model, "variant": variant, "component": component, "metric": metric, "k": k,
                     "cases": len(known), "correct": sum(known), "accuracy": rate(sum(known), len(known)),
                     "ci_low": low, "ci_high": high, "not_evaluable": len(outcomes) - len(known)})
    return rows
