"""Score formulas of the papers, as plain functions with hand-checkable results.

* AI Consilium: a component's score is the mean of its applicable criteria's
  0–3 scores; not-evaluable outcomes are left out of means (ai-consilium.txt, Fig. 7).
* OpenTumorBoard four-decision rubric: the weighted mean over in-scope decisions
  of score/5, weights therapy 1.00, surgery 1.25, next_action 1.15,
  clinical_trial 2.00; −1 marks a decision out of scope (opentumorboard.txt, App. C.3, E.2). A
  dimension not evaluable (None) enters neither sum, so it never voids the others.
* NPCBench signed criteria: max(0, Σ weights of met requirements − 2·majors − minors),
  normalised to 0–100 against the requirements' total weight of 10 (npcbench.txt, Eq. A7–A8).
* Neural-MedBench: pass@k over a ranked differential (its Wilson score intervals: consilium/stats).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["mean_score", "pass_at_k", "signed_score", "weighted_decisions"]


def mean_score(scores: Iterable[float | None]) -> float | None:
    """Mean of the numeric scores; None (not evaluable) is left out; None if nothing is left."""
    values = [s for s in scores if s is not None]
    return sum(values) / len(values) if values else None


def weighted_decisions(scores: Mapping[str, int | None], weights: Mapping[str, float]) -> float | None:
    """Σ w·(s/5) / Σ w over decisions in scope (s ≠ −1) that were judged (s not None); None when
    none is left."""
    in_scope = {name: s for name, s in scores.items() if s is not None and s != -1}
    total = sum(weights[name] for name in in_scope)
    if not in_scope or total == 0:
        return None
    return sum(weights[name] * s / 5 for name, s in in_scope.items()) / total


def signed_score(met_requirement_weights: Sequence[float], majors_present: int, minors_present: int,
                 requirement_total: float = 10.0) -> float:
    """NPCBench Eq. A7 with its floor at zero, as a percentage of the requirements' total weight."""
    raw = sum(met_requirement_weights) - 2 * majors_present - minors_present
    return 100.0 * max(0.0, raw) / requirement_total


def pass_at_k(matches: Sequence[bool], k: int) -> bool:
    """True when any of the first ``k`` ranked candidates matches the reference."""
    if k < 1:
        raise ValueError("k must be at least 1")
    return any(matches[:k])
