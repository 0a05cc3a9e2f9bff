"""Each rubric ``scoring`` kind as data: what it needs and decides, which the stages of judging read.

* ``mean`` (AI Consilium) and ``single`` (OpenTumorBoard C.1, C.2): one call per criterion, a score
  and flags each; ``mean`` averages the per-output criteria, ``single`` reports its one score.
* ``weighted_decisions`` (OpenTumorBoard C.3): one call, four scores, one item per dimension.
* ``signed_criteria`` (NPCBench): one call per criterion of the case's own rubric, met or not.
* ``diagnosis_match`` (Neural-MedBench): one call per candidate diagnosis, match or not; pass@k.
* ``consistency`` (the OpenTumorBoard authors' consistency judge, ``training/verl_otb/reward.py``): one call on a
  board's discussion and conclusion under the frozen scope, seven scores and two flags, one item per score.

How a kind judges is one entry per stage, keyed by its name: the calls a component needs (tasks.py), how
an answer becomes an item (parsing.py) and how a component's items become its scores (component_scores.py).
A new kind is a name in :data:`Scoring`, a line in :data:`KINDS` and an entry in each of those tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["KINDS", "Scoring", "ScoringKind", "scoring_kind"]

Scoring = Literal["mean", "single", "weighted_decisions", "signed_criteria", "diagnosis_match", "consistency"]


@dataclass(frozen=True)
class ScoringKind:
    """What a scoring kind decides; the defaults are the per-criterion rubrics'."""

    name: Scoring
    #: Whether a case without the rubric's reference is not evaluable (else judged against the case alone).
    needs_reference: bool = True
    #: Whether the criteria are the case's own (``reference.rubric``), not the rubric file's.
    criteria_from_case: bool = False
    #: Whether ``--scope`` (the four-decision scope protocols) applies.
    takes_scope: bool = False
    #: Whether it is judged under a frozen scope whatever ``--scope`` says.
    always_frozen: bool = False
    #: Whether each criterion has instructions of its own that ``calibrate evolve`` can rewrite.
    evolvable: bool = True
    #: The components it scores whatever the rubric's criteria say (the case's own criteria apply to the
    #: conclusion and a turn's answer); empty: those the rubric's criteria name (``Rubric.components``).
    fixed_components: tuple[str, ...] = ()


#: Every scoring kind by the name a rubric's ``scoring`` gives.
KINDS: dict[str, ScoringKind] = {kind.name: kind for kind in (
    # AI Consilium: judged against the case; the reference informs one criterion only.
    ScoringKind("mean", needs_reference=False),
    ScoringKind("single"),
    ScoringKind("weighted_decisions", takes_scope=True),
    ScoringKind("signed_criteria", criteria_from_case=True, evolvable=False,
                fixed_components=("conclusion", "answer")),
    ScoringKind("diagnosis_match", evolvable=False),
    ScoringKind("consistency", takes_scope=True, always_frozen=True, evolvable=False))}


def scoring_kind(name: str) -> ScoringKind:
    return KINDS[name]
