"""From judge items to each component's score, by the rubric's scoring kind (component_scores.py); text-overlap
metrics; the summary across judged traces (its replicates and pass@k counted as the paper tables count
them: consilium/judges/per_case.py)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from consilium.cases import Case
from consilium.judges.component_scores import component_scores, pass_at
from consilium.judges.components import TurnReference
from consilium.judges.per_case import case_values
from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import Rubric
from consilium.judges.similarity import semantic_similarity
from consilium.stats import wilson

__all__ = ["Arm", "aggregate", "overlap_metrics", "summarise"]


def _by_component(items: list[JudgementItem]) -> dict[str, list[JudgementItem]]:
    groups: dict[str, list[JudgementItem]] = {}
    for item in items:
        groups.setdefault(item.component, []).append(item)
    return groups


def _component(rubric: Rubric, items: list[JudgementItem], k: int) -> dict[str, Any]:
    not_evaluable = sum(i.not_evaluable for i in items)
    return {"items": len(items), "not_evaluable": not_evaluable,
            **component_scores(rubric, items, not_evaluable, k)}


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


#: Aggregates that describe a record rather than score it: never averaged in the summary.
_DESCRIPTIVE = ("items", "not_evaluable", "k", "ranked", "matches")


@dataclass(frozen=True)
class _Depth:
    """The summary's one pass@k: the judges' k (``asked``), or the most candidates any trace ranks
    (``ranks``) when that is fewer, for every group alike, so that their rows compare."""

    asked: int
    ranks: int

    @property
    def k(self) -> int:
        return min(self.asked, self.ranks)


def _ranked(items: list[JudgementItem]) -> list[JudgementItem]:
    return sorted((i for i in items if i.criterion.startswith("rank_")), key=lambda i: int(i.criterion[5:]))


def _asked(summary: dict[str, Any], ranks: int) -> int:
    """The judge's k: the record's ``k``, or its ``pass@k`` key in a record made before the label named
    the k its candidates reach."""
    if isinstance(summary.get("k"), int):
        return int(summary["k"])
    return max((int(key[5:]) for key in summary if key.startswith("pass@") and key[5:].isdigit()), default=ranks)


def _depth(judgements: list[Judgement]) -> _Depth | None:
    found = [(judgement.aggregates.get(component, {}), len(_ranked(items)))
             for judgement in judgements
             for component, items in _by_component(getattr(judgement, "items", None) or []).items()
             if _ranked(items)]
    if not found:
        return None
    return _Depth(max(_asked(summary, ranks) for summary, ranks in found), max(ranks for _, ranks in found))


def _values(summary: dict[str, Any], items: list[JudgementItem], depth: _Depth | None) -> dict[str, Any]:
    """A record's component aggregates as the summary reads them: pass@k at the summary's one k (from its
    ranked items, scored on those it ranks when fewer), the record's own pass@k labels dropped."""
    values = {key: value for key, value in summary.items()
              if key not in _DESCRIPTIVE and not (key.startswith("pass@") and key != "pass@1")}
    ranked = _ranked(items)
    if ranked and depth is not None and depth.k > 1:
        values[f"pass@{depth.k}"] = pass_at(ranked, [i.score == 1.0 for i in ranked], depth.k)
    return values


@dataclass(frozen=True)
class Arm:
    """What the summary needs of a judged trace besides its judgement: its panel model, whether the run
    failed (it has no answer) and whether its case has what the rubric compares with (None: unknown)."""

    model: str = "-"
    failed: bool = False
    has_reference: bool | None = None


def _missing_answer(key: str) -> bool:
    """An aggregate on which a missing answer is incorrect: the diagnosis match and pass@k
    (neural-medbench.txt, Evaluation Metrics; npcbench.txt App. C: "Missing or conflicting extracted
    answers have correctness zero and remain in the scored denominator")."""
    return key == "match" or key.startswith("pass@")


def summarise(judgements: list[Judgement], arms: list[Arm] | None = None) -> list[dict[str, Any]]:
    """Across judged traces, per (protocol, model, variant, component): the mean of each numeric aggregate
    and, for each yes/no aggregate (match, pass@k, has_major_error…), the rate with its 95 % Wilson
    interval, counted as the paper tables count (:mod:`consilium.judges.per_case`): a case's replicates
    averaged first, the statistic the mean over cases, Wilson's n the number of cases (``n``; ``arms`` the
    traces whose value is known). ``arms`` describes each judgement's trace (none: one model, none
    failed): the trace of a failed run counts as an incorrect answer on match and pass@k unless its case
    lacks the rubric's reference (then not evaluable), and as not evaluable on every other aggregate. A
    consilium's and a single specialist's free-form answers are never pooled. pass@k is shown for one k,
    the judges' k or the most candidates any trace ranks when that is fewer (``notes`` says so): pass@5 of
    three candidates would be pass@3 under another name."""
    depth = _depth(judgements)
    described = arms if arms is not None else [Arm()] * len(judgements)
    groups: dict[tuple[str, str, str, str], list[tuple[str, Arm, int, dict[str, Any]]]] = {}
    for judgement, arm in zip(judgements, described, strict=True):
        protocol = getattr(judgement, "trace_kind", None) or "-"  # a record built unvalidated may lack it
        items = _by_component(getattr(judgement, "items", None) or [])
        for component, summary in judgement.aggregates.items():
            values = {} if arm.failed else _values(summary, items.get(component, []), depth)
            groups.setdefault((protocol, arm.model, judgement.variant or "-", component), []).append(
                (judgement.case_id, arm, summary.get("not_evaluable", 0), values))
    rows = []
    for (protocol, model, variant, component), found in sorted(groups.items()):
        row: dict[str, Any] = {"protocol": protocol, "model": model, "variant": variant, "component": component,
                               "cases": len({case for case, *_ in found}), "traces": len(found),
                               "failed": sum(arm.failed for _, arm, _, _ in found),
                               "not_evaluable": sum(n for *_, n, _ in found)}
        if depth is not None and depth.k < depth.asked and any(f"pass@{depth.k}" in v for *_, v in found):
            row["notes"] = [f"pass@{depth.asked} n/a: the traces rank at most {depth.ranks} candidates"]
        for key in sorted({key for *_, values in found for key in values}):
            failure = _missing_answer(key)
            given = [(case, False if arm.failed and failure and arm.has_reference is not False else values.get(key))
                     for case, arm, _, values in found]
            if all(isinstance(v, bool) or v is None for _, v in given) and any(isinstance(v, bool) for _, v in given):
                counted = case_values((case, None if v is None else float(v)) for case, v in given)
                row[key] = {"rate": counted.total / counted.cases, "n": counted.cases, "arms": counted.arms,
                            "wilson95": [None if b is None else round(b, 4)
                                         for b in wilson(counted.total, counted.cases)]}
            elif all((isinstance(v, int | float) and not isinstance(v, bool)) or v is None for _, v in given):
                counted = case_values((case, None if v is None else float(v)) for case, v in given)
                row[key] = {"mean": counted.total / counted.cases if counted.cases else None, "n": counted.cases,
                            "arms": counted.arms}
        rows.append(row)
    return rows
