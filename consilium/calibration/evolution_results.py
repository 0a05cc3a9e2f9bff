"""What an evolution of one criterion's judge instructions yields (ai-consilium.txt, Table 5): the
candidates, each repeat's best initial and best descendant with their re-evaluations, and the
criterion's summary over repeats with the promotion decision.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Candidate", "CriterionResult", "Evaluation", "RepeatResult"]


@dataclass
class Candidate:
    instruction: str
    origin: str  # "initial" or "descendant"
    parent: int | None
    train_mae: float = float("inf")
    worst: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Evaluation:
    """One candidate judged on a set of items: its MAE, worst disagreements and the judge calls made."""

    mae: float
    worst: list[str]
    calls: int
    cached: int
    seeds: frozenset[int | None]


@dataclass
class RepeatResult:
    repeat: int
    train_cases: int
    val_cases: int
    train_items: int
    val_items: int
    selection_seed: int
    reevaluation_seed: int
    best_initial: Candidate
    best_descendant: Candidate
    selection_initial: float  # training MAE in the selection pass
    selection_descendant: float
    train_initial: Evaluation  # training re-evaluation
    train_descendant: Evaluation
    val_initial: Evaluation | None
    val_descendant: Evaluation | None
    selection_calls: int


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values and not any(math.isnan(v) for v in values) else None


def _sd(values: list[float]) -> float | None:
    """The sample SD (n − 1) over the repeats, as ai-consilium.txt Table 5 reports it: each of its
    non-zero SDs is the sample SD of three repeats' MAEs (e.g. 1.0494 ± 0.1132 is 25, 29 and 31 of 27
    items), none a population SD. None for fewer than two repeats (a sample SD needs two)."""
    return statistics.stdev(values) if len(values) >= 2 and not any(math.isnan(v) for v in values) else None


@dataclass
class CriterionResult:
    criterion: str
    repeats: list[RepeatResult]
    calls: int  # optimiser calls

    def column(self, name: str) -> list[float]:
        """One Table 5 cell's values over repeats: train_best_initial, train_best_descendant,
        val_best_initial or val_best_descendant (NaN where there were no validation cases)."""
        phase, _, which = name.partition("_best_")
        evaluations = [getattr(r, f"{phase}_{which}") for r in self.repeats]
        return [e.mae if e is not None else float("nan") for e in evaluations]

    @property
    def best_initial_train(self) -> list[float]:
        return self.column("train_best_initial")

    @property
    def best_descendant_train(self) -> list[float]:
        return self.column("train_best_descendant")

    @property
    def best_initial_val(self) -> list[float]:
        return self.column("val_best_initial")

    @property
    def best_descendant_val(self) -> list[float]:
        return self.column("val_best_descendant")

    def summary(self) -> dict[str, Any]:
        def stat(values: list[float]) -> dict[str, float | None]:
            return {"mean": _mean(values), "sd": _sd(values)}
        return {"criterion": self.criterion, "train_best_initial": stat(self.best_initial_train),
                "train_best_descendant": stat(self.best_descendant_train),
                "val_best_initial": stat(self.best_initial_val), "val_best_descendant": stat(self.best_descendant_val),
                "repeats": len(self.repeats), "calls": self.calls}

    def decision(self) -> tuple[bool, str]:
        """Promote the evolved instructions only when the mean over repeats of the best descendant's
        MAE is below the best initial's on training re-evaluation and also on validation."""
        s = self.summary()
        train = (s["train_best_initial"]["mean"], s["train_best_descendant"]["mean"])
        val = (s["val_best_initial"]["mean"], s["val_best_descendant"]["mean"])
        if None in val:
            return False, "not promoted: no validation cases to confirm it"
        assert train[0] is not None and train[1] is not None and val[0] is not None and val[1] is not None
        if not train[1] < train[0]:
            return False, f"not promoted: training re-evaluation MAE did not improve ({train[0]:.3f} -> {train[1]:.3f})"
        if not val[1] < val[0]:
            return False, f"not promoted: validation MAE did not improve ({val[0]:.3f} -> {val[1]:.3f})"
        return True, (f"promoted: training re-evaluation MAE {train[0]:.3f} -> {train[1]:.3f}, validation MAE "
                      f"{val[0]:.3f} -> {val[1]:.3f}")

    @property
    def chosen(self) -> RepeatResult | None:
        """The repeat whose best descendant improved most on its own training re-evaluation (the
        first such on a tie): the instructions a promotion writes. Validation plays no part in it."""
        if not self.repeats:
            return None
        return max(self.repeats, key=lambda r: (r.train_initial.mae - r.train_descendant.mae, -r.repeat))

    @property
    def winner(self) -> Candidate | None:
        chosen = self.chosen
        return chosen.best_descendant if chosen is not None else None
