"""Each rubric scoring kind is one entry in one table (its facts) and one entry in each stage's table (its
calls, its reader, its scores): the tables cover every kind a rubric may name, and each shipped rubric's kind
says what the judge runner, --scope, calibrate and evolve used to decide with if/elif chains on the kind's name."""

from __future__ import annotations

from typing import get_args

from consilium.judges import component_scores, parsing, tasks
from consilium.judges.kinds import KINDS, Scoring, ScoringKind, scoring_kind
from consilium.judges.rubric import builtin_rubric_names, load_rubric


def test_every_scoring_kind_has_one_entry_per_stage() -> None:
    assert sorted(KINDS) == sorted(get_args(Scoring))
    assert all(isinstance(kind, ScoringKind) and kind.name == name for name, kind in KINDS.items())
    stages = {"tasks": tasks._BUILDERS, "parsing": parsing._READERS, "component_scores": component_scores._SCORES}
    assert {stage: sorted(table) for stage, table in stages.items()} == dict.fromkeys(stages, sorted(get_args(Scoring)))


def test_each_kind_decides_what_the_chains_decided() -> None:
    facts = {name: (k.needs_reference, k.criteria_from_case, k.takes_scope, k.evolvable) for name, k in KINDS.items()}
    assert facts == {"mean": (False, False, False, True), "single": (True, False, False, True),
                     "weighted_decisions": (True, False, True, True), "signed_criteria": (True, True, False, False),
                     "diagnosis_match": (True, False, False, False), "consistency": (True, False, True, False)}
    components = {name: load_rubric(name).components for name in builtin_rubric_names()}
    assert components == {"ai-consilium": ["role_reasoning", "role_opinion", "conclusion"],
                          "nmb-diagnosis-match": ["conclusion", "differential"],
                          "npc-signed-criteria": ["conclusion", "answer"],
                          "otb-clinical-equivalence": ["answer"], "otb-conclusion-alignment": ["conclusion"],
                          "otb-consistency": ["conclusion"], "otb-four-decision": ["conclusion"]}
    assert all(load_rubric(name).kind is scoring_kind(load_rubric(name).scoring) for name in builtin_rubric_names())
