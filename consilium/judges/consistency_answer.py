"""The consistency judge's answer (``otb-consistency``), as the OpenTumorBoard authors' reward code asks for and
reads it (AnqiLi24/OpenTumorBoard ``training/verl_otb/reward.py``): the four decisions under the frozen scope,
three whole-response scores 0-5, two flags and a rationale, in one object; read into one canonical value as
answers.py reads every other answer.
"""

from __future__ import annotations

import functools
from typing import Any

from consilium.judges.answers import (
    closed_object,
    closed_schema_example,
    integer_property,
    need_rationale,
    rationale_property,
    validate_answer,
)
from consilium.judges.rubric import Rubric
from consilium.judges.scope import OUT_OF_SCOPE
from consilium.models import OutputSchema
from consilium.models.structured import extract_json

__all__ = ["consistency_schema", "consistency_shape"]


def _consistency_json(rubric: Rubric, locked: frozenset[str]) -> dict[str, Any]:
    """The authors' consistency schema (training/verl_otb/reward.py): each decision −1 where the frozen scope
    leaves it absent, else 0-5; the whole-response scores 0-5; the two flags; a rationale."""
    points = integer_property([s for s in rubric.scores if s != OUT_OF_SCOPE])
    scores = {c.id: integer_property([OUT_OF_SCOPE]) if c.id in locked else points for c in rubric.criteria}
    flags = {flag.id: {"type": "boolean"} for flag in rubric.flags}
    return closed_object({**scores, **flags, "rationale": rationale_property(rubric)})


def _read_consistency(rubric: Rubric, locked: frozenset[str], name: str, text: str) -> dict[str, Any]:
    """The consistency answer as ``{"scores", "flags", "rationale", "ignored"}``; a locked decision reads −1
    whatever was written there (what was, in ``ignored``), as the authors' code reads it."""
    value = extract_json(text)
    if not isinstance(value, dict):
        validate_answer(_consistency_json(rubric, locked), value, name)
    ignored = {dim: value[dim] for dim in sorted(locked) if dim in value and value[dim] != OUT_OF_SCOPE}
    value = {**value, **dict.fromkeys(locked, OUT_OF_SCOPE)}
    validate_answer(_consistency_json(rubric, locked), value, name)
    need_rationale(rubric, value["rationale"], "rationale", name)
    return {"scores": {c.id: value[c.id] for c in rubric.criteria}, "flags": {f.id: value[f.id] for f in rubric.flags},
            "rationale": value["rationale"], "ignored": ignored}


def consistency_schema(rubric: Rubric, locked: frozenset[str]) -> OutputSchema:
    name = f"{rubric.name}-judgement"
    return OutputSchema(name=name, json_schema=_consistency_json(rubric, locked),
                        check=functools.partial(_read_consistency, rubric, locked, name))


def consistency_shape(rubric: Rubric, locked: frozenset[str]) -> str:
    return closed_schema_example(consistency_schema(rubric, locked))
