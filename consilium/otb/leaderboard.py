"""The leaderboard's summary of judged responses, as the authors' ``summarize_llm_judge_batch.py``
computes it (AnqiLi24/OpenTumorBoard ``scripts/evaluation/judge/``), per model:

- every item is ``scored``, a ``format_failure`` (no extractable conclusion or answer: never sent to the
  judge) or a ``judge_failure`` (the judge's call or answer failed); the three are counted apart;
- conclusion alignment and clinical equivalence (1–5) are means in which each format failure counts as 1,
  the floor of the scale; judge failures are left out;
- the four decisions: each decision's mean over the scored items that take it (score ≥ 0; −1 marks a
  decision the reference does not take), with its count; format failures are not counted; no composite. A
  decision's score must be −1 or 1–5 (:func:`decision_valid`): the summarizer's ``validate`` fails a judge answer
  holding a 0 whole, so such an item is a judge failure and a 0 never reaches a mean;
- Specialist Turn's critical-error and unsupported-claim rates are fractions of the scored items, and each
  question type (``qa_type``) gets its count, mean equivalence and both rates over its scored items.

Means with nothing to average are None (null in ``summary.json``), as in the official file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any, Literal

DECISIONS = ("therapy", "surgery", "next_action", "clinical_trial")
FLOOR = 1
Rubric = Literal["conclusion_alignment", "four_decisions", "clinical_equivalence"]
Status = Literal["scored", "format_failure", "judge_failure"]


@dataclass(frozen=True)
class Item:
    """One judged response: its model, status and (when scored) the judge's scores under the official
    names: ``conclusion_alignment`` (1–5), the four decisions (0–5 or −1), or
    ``clinical_equivalence_score`` with the ``critical_error`` and ``unsupported_claim`` flags."""

    model: str
    status: Status
    scores: dict[str, Any] | None = None
    qa_type: str | None = None


def decision_valid(value: int) -> bool:
    """A four-decision score the official summary accepts (``summarize_llm_judge_batch.py``, ``validate``): −1 (the
    reference does not take the decision) or 1–5. 0, which the reward's frozen scope allows in scope
    (consilium/otb/reward.py), is out of the leaderboard's range."""
    return value == -1 or 1 <= value <= 5


def _floored_mean(values: list[int], failures: int) -> float | None:
    total = len(values) + failures
    return (sum(values) + FLOOR * failures) / total if total else None


def _rate(items: Sequence[Item], flag: str) -> float | None:
    return sum(bool(i.scores and i.scores[flag]) for i in items) / len(items) if items else None


def _turn_breakdown(scored: Sequence[Item]) -> dict[str, dict[str, Any]]:
    by_type: dict[str, list[Item]] = defaultdict(list)
    for item in scored:
        by_type[str(item.qa_type)].append(item)
    return {qa_type: {"count": len(items),
                      "clinical_equivalence": fmean(i.scores["clinical_equivalence_score"] for i in items
                                                    if i.scores is not None),
                      "critical_error_rate": _rate(items, "critical_error"),
                      "unsupported_claim_rate": _rate(items, "unsupported_claim")}
            for qa_type, items in sorted(by_type.items())}


def model_entry(rubric: Rubric, items: Sequence[Item]) -> dict[str, Any]:
    scored = [i for i in items if i.status == "scored" and i.scores is not None]
    failures = sum(i.status == "format_failure" for i in items)
    entry: dict[str, Any] = {"items": len(items), "scored": len(scored), "format_failures": failures,
                             "judge_failures": sum(i.status == "judge_failure" for i in items)}
    if rubric == "conclusion_alignment":
        entry["conclusion_alignment"] = _floored_mean([i.scores["conclusion_alignment"] for i in scored
                                                       if i.scores is not None], failures)
    elif rubric == "four_decisions":
        for name in DECISIONS:
            values = [i.scores[name] for i in scored if i.scores is not None and i.scores[name] >= 0]
            entry[name] = {"mean": fmean(values) if values else None, "cases": len(values)}
    else:
        entry["clinical_equivalence"] = _floored_mean([i.scores["clinical_equivalence_score"] for i in scored
                                                       if i.scores is not None], failures)
        entry["critical_error_rate"] = _rate(scored, "critical_error")
        entry["unsupported_claim_rate"] = _rate(scored, "unsupported_claim")
        entry["by_question_type"] = _turn_breakdown(scored)
    return entry


def summary(rubric: Rubric, items: Sequence[Item]) -> dict[str, Any]:
    """``{"rubric": …, "models": {model: entry}}``, models in sorted order, as one task of the official
    ``summary.json``."""
    by_model: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_model[item.model].append(item)
    return {"rubric": rubric, "models": {m: model_entry(rubric, rows) for m, rows in sorted(by_model.items())}}
