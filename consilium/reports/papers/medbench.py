"""Neural-MedBench's diagnostic accuracy (neural-medbench.txt, Evaluation Metrics; Confidence
Intervals): pass@1 and pass@k per model and variant, each with its 95 % Wilson score interval.

Counted as every paper table here counts (:mod:`consilium.reports.papers.per_case`): a case's replicates
averaged first, Wilson's n the cases, a failed arm an incorrect answer, a case without a reference
diagnosis not evaluable for every model. pass@k is shown for the k the responses can reach: the judge's
k, or fewer when no response ranks that many candidates (a note says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from consilium.judges.record import JudgementItem
from consilium.reports.papers.per_case import FailedArm, HasReference, case_values, rubric_groups, shared_rows
from consilium.reports.papers.responses import Response, by_component
from consilium.reports.papers.stats import count, rate, rounded
from consilium.stats import wilson

__all__ = ["RUBRIC", "outcome", "pass_at_k_table"]

RUBRIC = "nmb-diagnosis-match"


def _k(response: Response, component: str, ranks: int) -> int:
    """The judge's k (``judge --k``): the record's ``k``, or its ``pass@k`` key in a record made before the
    label named the k its candidates reach; the ranks judged otherwise."""
    found = response.aggregates.get(component, {})
    if isinstance(found.get("k"), int):
        return int(found["k"])
    keys = [int(key[5:]) for key in found if key.startswith("pass@")]
    return max(keys, default=ranks)


def _ranked(items: list[JudgementItem]) -> list[JudgementItem]:
    return sorted((i for i in items if i.criterion.startswith("rank_")), key=lambda i: int(i.criterion[5:]))


def outcome(items: list[JudgementItem], k: int) -> bool | None:
    """pass@k of one response: True when one of its first k ranked candidates was judged a match,
    False when all of them were judged and none matched, None when that is undetermined (a candidate
    not evaluable and no match before it) or there is nothing to judge."""
    ranked = _ranked(items)[:k]
    if not ranked:
        return None
    if any(i.score == 1.0 for i in ranked):
        return True
    return False if all(i.score is not None for i in ranked) else None


def _conclusion(items: list[JudgementItem]) -> bool | None:
    judged = [i.score == 1.0 if i.score is not None else None for i in items if i.criterion == "final_conclusion"]
    return judged[0] if judged else None


@dataclass
class _Metric:
    """One (component, metric) row of a group: each arm's (case, outcome) and the ``note``."""

    k: int
    outcomes: list[tuple[str, bool | None]]
    note: str = ""


@dataclass(frozen=True)
class _Depth:
    """The table's one pass@k: ``k`` = the judge's k (``asked``), or the most candidates any response ranks
    (``ranks``) when that is fewer, for every model and variant alike, so that their rows compare."""

    asked: int
    ranks: int

    @property
    def k(self) -> int:
        return min(self.asked, self.ranks)


def _differentials(group: list[Response]) -> list[tuple[Response, list[JudgementItem]]]:
    return [(r, items) for r in group for component, items in by_component(r).items() if component == "differential"]


def _depth(responses: list[Response]) -> _Depth | None:
    """The pass@k of the rubric's responses (None when none has a differential): pass@5 of three candidates
    would be pass@3 under another name."""
    found = _differentials([r for r in responses if r.rubric == RUBRIC])
    if not found:
        return None
    return _Depth(max(_k(r, "differential", len(_ranked(items))) for r, items in found),
                  max(len(_ranked(items)) for _, items in found))


def _metrics(group: list[Response], depth: _Depth | None) -> dict[tuple[str, str], _Metric]:
    """(component, metric) → the group's outcomes: the differential's pass@1 and pass@k (k of ``depth``),
    the conclusion's pass@1."""
    found: dict[tuple[str, str], _Metric] = {}
    differentials = [(r.case_id, items) for r, items in _differentials(group)]
    if differentials:
        found[("differential", "pass@1")] = _Metric(1, [(case, outcome(items, 1)) for case, items in differentials])
    if depth is not None and depth.k > 1:
        k = depth.k
        fewer = sum(len(_ranked(items)) < k for _, items in differentials)
        notes = [f"pass@{depth.asked} n/a: the responses rank at most {depth.ranks} candidates"] \
            if k < depth.asked else []
        notes += [f"{fewer} response(s) rank fewer than {k}, scored on those"] if fewer else []
        if differentials:
            found[("differential", f"pass@{k}")] = _Metric(
                k, [(case, outcome(items, k)) for case, items in differentials], "; ".join(notes))
    conclusions = [(r.case_id, _conclusion(items)) for r in group for component, items in by_component(r).items()
                   if component != "differential"]
    if conclusions:
        found[("conclusion", "pass@1")] = _Metric(1, conclusions)
    return found


def pass_at_k_table(responses: list[Response], failed: Mapping[tuple[str, str], list[FailedArm]] | None = None,
                    reference: HasReference | None = None) -> list[dict[str, Any]]:
    """Per model, variant, component and metric: the ``cases`` whose outcome is known (each the mean of
    its replicates' outcomes), ``correct`` (their sum: a count when each case has one arm), the accuracy
    and its Wilson interval over the cases; ``arms`` the arm outcomes averaged into them, of which
    ``failed`` were failed arms (each incorrect, a missing answer); ``not_evaluable`` the arms whose
    outcome is undetermined (a case none of whose arms is decided is not in ``cases``). The
    ``conclusion`` component's one candidate (the final conclusion) gives pass@1; the ``differential``
    component's ranked candidates give pass@1 (rank 1) and pass@k (any of ranks 1..k). ``failed``
    arms come from :func:`~consilium.reports.papers.per_case.failed_arms`; ``reference`` says whether a
    case has a reference diagnosis (a failed arm of a case without one is not evaluable)."""
    failed, known = failed or {}, reference or (lambda case: None)
    groups = rubric_groups(responses, RUBRIC, failed)
    depth = _depth(responses)
    metrics = {key: _metrics(group, depth) for key, group in groups.items()}
    # (model, variant) → its rows, (component, metric) and k
    shapes = shared_rows({key: [(name, metric.k) for name, metric in found.items()] for key, found in metrics.items()})
    rows = []
    for (model, variant), found in metrics.items():
        missing = failed.get((model, variant), [])
        for name, k in shapes[(model, variant)]:
            metric = found.setdefault(name, _Metric(k, []))
            metric.outcomes += [(arm.case_id, None if known(arm.case_id) is False else False) for arm in missing]
        for (component, label), metric in sorted(found.items(), key=lambda m: (m[0][0], m[1].k)):
            values = case_values((case, None if o is None else float(o)) for case, o in metric.outcomes)
            low, high = rounded(wilson(values.total, values.cases))
            rows.append({"model": model, "variant": variant, "component": component, "metric": label,
                         "k": metric.k, "cases": values.cases, "correct": count(values.total),
                         "accuracy": rate(values.total, values.cases), "ci_low": low, "ci_high": high,
                         "arms": values.arms,
                         "failed": sum(known(a.case_id) is not False for a in missing),
                         "not_evaluable": values.unknown, "note": metric.note})
    return rows
