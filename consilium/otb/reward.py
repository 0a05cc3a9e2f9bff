"""The Board Simulation reward of the authors' RL code (AnqiLi24/OpenTumorBoard
``training/verl_otb/reward.py``; opentumorboard.txt App. E.2), from three judge answers and the format
score:

- alignment = (conclusion alignment − 1) / 4, from its 1–5 score;
- decisions = Σ w·s/5 / Σ w over the decisions the frozen scope takes (w: therapy 1.00, surgery 1.25,
  next action 1.15, clinical trial 2.00; s: 0–5); 0 when the scope takes none;
- consistency = the consistency judge's discussion–conclusion consistency / 5;
- match = .40·alignment + .35·decisions·consistency + .25·decisions;
- reward = match + .10·format score.

A response that fails the format (truncated, a severe loop, a missing block: any failure reason) is never
judged: its match is −.20 and its reward −.20 + .10·format score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from consilium.otb.format_score import FormatScore

WEIGHTS = {"therapy": 1.00, "surgery": 1.25, "next_action": 1.15, "clinical_trial": 2.00}
ALIGNMENT, SUPPORT, DECISIONS, FORMAT = 0.40, 0.35, 0.25, 0.10
INVALID_MATCH = -0.20


@dataclass(frozen=True)
class Judged:
    """The judges' answers for one board: conclusion alignment 1–5, each decision's 0–5 score (those the
    frozen scope takes), and the consistency judge's discussion–conclusion consistency 0–5."""

    alignment: int
    decisions: Mapping[str, int]
    consistency: int


@dataclass(frozen=True)
class Reward:
    alignment: float
    decisions: float
    consistency: float
    match: float
    reward: float
    judged: bool


def decisions_score(scores: Mapping[str, int]) -> float:
    total = sum(WEIGHTS[name] for name in scores)
    return sum(WEIGHTS[name] * s / 5 for name, s in scores.items()) / total if total else 0.0


def reward(fmt: FormatScore, judged: Judged | None) -> Reward:
    """The reward of one board; ``judged`` is None for a response that fails the format (it is never
    judged) and required otherwise."""
    if fmt.failure or judged is None:
        if not fmt.failure:
            raise ValueError("a well-formed response needs its judges' answers")
        return Reward(0.0, 0.0, 0.0, INVALID_MATCH, INVALID_MATCH + FORMAT * fmt.score, judged=False)
    alignment, decisions = (judged.alignment - 1) / 4, decisions_score(judged.decisions)
    consistency = judged.consistency / 5
    match = ALIGNMENT * alignment + SUPPORT * decisions * consistency + DECISIONS * decisions
    return Reward(alignment, decisions, consistency, match, match + FORMAT * fmt.score, judged=True)
