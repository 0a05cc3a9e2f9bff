"""What a judge is asked to return, and the one place its answer is read into a canonical value.

A rubric whose paper gives an output schema is asked for that schema, keys in the paper's order
(opentumorboard.txt App. C.1 L172: ``clinical_equivalence_score`` first; C.2 L178: the nested
``{"conclusion_alignment": {"score", "rationale"}}``; C.3 L186: the four dimensions, then the
rationale). The project's earlier flat ``{"rationale", "score"}`` is accepted too; both become one
canonical value here, before the runner reads it. Where the paper requires a rationale
(``minLength`` 1) a blank one is a validation error, which goes back to the judge through the
repair loop like any other.

The four-decision rubric has two scope protocols (App. E.2 L194): ``frozen`` locks every dimension
the candidate-blind labelling leaves absent (scope_labels.py: the case's ``reference.decisions`` or a scope
call's labels) to −1 in the schema the judge fills and ignores any answer on it, and scores every other
0-5 as the authors' reward code does (the rubric's ``frozen_scale``); ``judge`` lets the judge decide scope
from the reference conclusion with the full schema (the evaluation's −1, 1-5). The consistency judge
(``otb-consistency``, consistency_answer.py) answers the authors' consistency schema, always under the frozen scope.

Answers that do not depend on the rubric (NPCBench's criterion met, Neural-MedBench's diagnosis match) are
pydantic models, each sent as a compact closed schema (:func:`closed_object_schema`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from consilium.cases import Case
from consilium.errors import UserError
from consilium.judges.rubric import AnswerShape, Rubric
from consilium.judges.scope import OUT_OF_SCOPE
from consilium.models import OutputSchema
from consilium.models.structured import OutputInvalid, extract_json

__all__ = ["MATCH", "SCOPES", "SIGNED", "CriterionMet", "DiagnosisMatch", "Scope", "check_scope", "closed_object",
           "closed_object_schema", "closed_schema_example", "criterion_schema", "criterion_shape", "decision_scope",
           "decisions_schema", "decisions_shape", "integer_property", "need_rationale", "partial_decisions",
           "rationale_property", "validate_answer"]

Scope = Literal["frozen", "judge"]
SCOPES: tuple[Scope, ...] = ("frozen", "judge")


# --- criterion rubrics: one score (and flags) per call ------------------------------------------------

def _score_property(rubric: Rubric) -> dict[str, Any]:
    scale = list(rubric.scale)
    if rubric.answer != AnswerShape() and not rubric.not_evaluable and scale == list(range(scale[0], scale[-1] + 1)):
        return {"type": "integer", "minimum": scale[0], "maximum": scale[-1]}  # as C.1 and C.2 write it
    return {"enum": scale + (["not_evaluable"] if rubric.not_evaluable else [])}


def rationale_property(rubric: Rubric) -> dict[str, Any]:
    minimum = {"minLength": 1} if rubric.answer.rationale_required else {}
    return {"type": "string", **minimum, "maxLength": rubric.rationale_max_chars}


def closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(properties), "properties": properties}


def _flat(rubric: Rubric, score_key: str, score_first: bool) -> dict[str, Any]:
    """The flat layout: score and rationale in the order asked, the flags after the score."""
    score = {score_key: _score_property(rubric)}
    flags = {flag.id: {"type": "boolean"} for flag in rubric.flags}
    rationale = {"rationale": rationale_property(rubric)}
    return closed_object({**score, **flags, **rationale} if score_first else {**rationale, **score, **flags})


def _requested(rubric: Rubric) -> dict[str, Any]:
    """The JSON schema the judge is asked to fill: the paper's, where the rubric names its layout."""
    shape = rubric.answer
    if shape.nest is None:
        return _flat(rubric, shape.score_key, shape.score_first)
    inner = _flat(rubric.model_copy(update={"flags": []}), shape.score_key, shape.score_first)
    flags = {flag.id: {"type": "boolean"} for flag in rubric.flags}
    return closed_object({shape.nest: inner, **flags})


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def validate_answer(schema: dict[str, Any], value: Any, name: str) -> None:
    try:
        _validator(json.dumps(schema, sort_keys=True)).validate(value)
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path) or "(root)"
        raise OutputInvalid(f"the JSON does not match the {name} schema: {where}: {exc.message}") from None


def need_rationale(rubric: Rubric, rationale: Any, where: str, name: str) -> None:
    if rubric.answer.rationale_required and isinstance(rationale, str) and not rationale.strip():
        raise OutputInvalid(f"the JSON does not match the {name} schema: {where}: the rationale is empty; "
                            "write the rationale the rubric asks for")


def _read_criterion(rubric: Rubric, name: str, requested: dict[str, Any], flat: dict[str, Any],
                    text: str) -> dict[str, Any]:
    """The answer in the ``requested`` layout or the ``flat`` ``{"rationale", "score", flags}`` one,
    validated against the layout it is in and returned as the flat canonical value."""
    value = extract_json(text)
    shape = rubric.answer
    in_requested = isinstance(value, dict) and (shape.nest in value if shape.nest else shape.score_key in value)
    if in_requested or requested == flat or not (isinstance(value, dict) and "score" in value):
        validate_answer(requested, value, name)
        inner = value[shape.nest] if shape.nest else value
        where = f"{shape.nest}.rationale" if shape.nest else "rationale"
        need_rationale(rubric, inner["rationale"], where, name)
        flags = {flag.id: value[flag.id] for flag in rubric.flags}
        return {"rationale": inner["rationale"], "score": inner[shape.score_key], **flags}
    validate_answer(flat, value, name)
    need_rationale(rubric, value["rationale"], "rationale", name)
    return dict(value)


def criterion_schema(rubric: Rubric) -> OutputSchema:
    """The schema a criterion rubric's judge fills (constrained decoding uses it), read by
    :func:`_read_criterion` into ``{"rationale", "score", <flags>}``."""
    name, requested, flat = f"{rubric.name}-judgement", _requested(rubric), _flat(rubric, "score", False)
    return OutputSchema(name=name, json_schema=requested,
                        check=functools.partial(_read_criterion, rubric, name, requested, flat))


def _example(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in prop["enum"])
    if prop.get("type") == "integer":
        return " | ".join(str(v) for v in range(prop["minimum"], prop["maximum"] + 1))
    if prop.get("type") == "boolean":
        return "true or false"
    if prop.get("type") == "object":
        return "{" + ", ".join(f'"{k}": {_example(v)}' for k, v in prop["properties"].items()) + "}"
    return '"..."'


def criterion_shape(rubric: Rubric) -> str:
    """The requested layout as the prompt shows it, keys in the schema's order."""
    return _example(_requested(rubric))


# --- the four-decision rubric: four scores in one call --------------------------------------------------

def decision_scope(requested: Scope | None, case: Case, always_frozen: bool = False) -> Scope:
    """The scope protocol a case is judged under: ``requested``, else frozen when the case labels its decisions
    (``reference.decisions``) and judge otherwise; ``always_frozen``: a rubric judged under a frozen scope only
    (the consistency judge). A frozen scope the case does not label is labelled by a candidate-blind call
    (frozen_scope.py)."""
    if always_frozen or requested == "frozen":
        return "frozen"
    if requested == "judge":
        return "judge"
    return "frozen" if case.reference is not None and case.reference.decisions is not None else "judge"


def check_scope(requested: Scope | None, rubrics: Iterable[Rubric], cases: Iterable[tuple[str, Case]]) -> None:
    """Before anything is judged: a frozen scope is labelled from the reference conclusion, so ``--scope frozen``
    with a four-decision rubric needs every case without its own labels (``reference.decisions``) to have one;
    the first that has not is a one-line :class:`UserError` naming its file."""
    if requested != "frozen" or not any(r.kind.takes_scope for r in rubrics):
        return
    for where, case in cases:
        reference = case.reference
        if reference is not None and reference.decisions is not None:
            continue
        if reference is None or not (reference.conclusion or "").strip():
            raise UserError(f"{where}: reference.decisions: --scope frozen needs the four decisions labelled, by "
                            "the case or by a candidate-blind call on its reference.conclusion, and this case has "
                            "neither; use --scope judge")


def _allowed(rubric: Rubric, locked: frozenset[str], frozen: bool, dimension: str) -> list[int]:
    """The scores a dimension may take. Frozen scope (opentumorboard.txt App. E.2 L194) fixed every
    dimension beforehand: an absent one is locked to −1, and one the labelling found decided (or
    decided against) is in scope, so it may not be marked −1 either; the judge protocol allows both."""
    if dimension in locked:
        return [OUT_OF_SCOPE]
    if frozen:  # the authors' reward code scores a decision in scope 0-5 (``frozen_scale``)
        return list(rubric.frozen_scale or [s for s in rubric.scale if s != OUT_OF_SCOPE])
    return list(rubric.scale)


def integer_property(allowed: list[int]) -> dict[str, Any]:
    """An integer property: a range as the authors' frozen schemas write it where the scores run on without a
    gap from 0, else the enumeration (the evaluation schema's ``[-1, 1, 2, 3, 4, 5]``)."""
    if len(allowed) > 1 and allowed[0] == 0 and allowed == list(range(allowed[0], allowed[-1] + 1)):
        return {"type": "integer", "minimum": allowed[0], "maximum": allowed[-1]}
    return {"type": "integer", "enum": allowed}


def _decisions_json(rubric: Rubric, locked: frozenset[str], frozen: bool = False) -> dict[str, Any]:
    dims = {c.id: integer_property(_allowed(rubric, locked, frozen, c.id)) for c in rubric.criteria}
    return closed_object({**dims, "rationale": rationale_property(rubric)})


def _read_decisions(rubric: Rubric, locked: frozenset[str], frozen: bool, name: str, text: str) -> dict[str, Any]:
    """The paper's four-decision object as ``{"scores", "rationale", "ignored"}``: a locked dimension
    reads −1 whatever was written there, and what was written is kept in ``ignored``."""
    value = extract_json(text)
    if not isinstance(value, dict):
        validate_answer(_decisions_json(rubric, locked, frozen), value, name)
    ignored = {dim: value[dim] for dim in sorted(locked) if dim in value and value[dim] != OUT_OF_SCOPE}
    value = {**value, **dict.fromkeys(locked, OUT_OF_SCOPE)}
    validate_answer(_decisions_json(rubric, locked, frozen), value, name)
    need_rationale(rubric, value["rationale"], "rationale", name)
    return {"scores": {c.id: value[c.id] for c in rubric.criteria}, "rationale": value["rationale"],
            "ignored": ignored}


def decisions_schema(rubric: Rubric, locked: frozenset[str], frozen: bool = False) -> OutputSchema:
    """App. C.3 L186's schema, each ``locked`` dimension allowing only −1 and, in frozen scope, every
    other dimension only 1–5 (App. E.2 L194)."""
    name = f"{rubric.name}-judgement"
    return OutputSchema(name=name, json_schema=_decisions_json(rubric, locked, frozen),
                        check=functools.partial(_read_decisions, rubric, locked, frozen, name))


def decisions_shape(rubric: Rubric, locked: frozenset[str], frozen: bool = False) -> str:
    return _example(_decisions_json(rubric, locked, frozen))


def closed_schema_example(schema: OutputSchema) -> str:
    """A JSON schema's object as a prompt shows it, keys in the schema's order."""
    assert schema.json_schema is not None
    return _example(schema.json_schema)


def partial_decisions(rubric: Rubric, locked: frozenset[str],
                      frozen: bool = False) -> Callable[[str], dict[str, Any] | None]:
    """For an answer still invalid after the repairs and the constrained attempt: each dimension whose
    value the schema allows is read, the others are None (not evaluable), so one bad dimension does
    not void the others. None when the answer is no object or has no rationale the rubric accepts."""
    def read(text: str) -> dict[str, Any] | None:
        try:
            value = extract_json(text)
        except OutputInvalid:
            return None
        rationale = value.get("rationale") if isinstance(value, dict) else None
        if not isinstance(rationale, str) or len(rationale) > rubric.rationale_max_chars or \
                (rubric.answer.rationale_required and not rationale.strip()):
            return None
        assert isinstance(value, dict)
        scores: dict[str, int | None] = {}
        for criterion in rubric.criteria:
            answer = value.get(criterion.id)
            ok = isinstance(answer, int) and not isinstance(answer, bool) and \
                answer in _allowed(rubric, locked, frozen, criterion.id)
            scores[criterion.id] = OUT_OF_SCOPE if criterion.id in locked else answer if ok else None
        if all(scores[c.id] is None for c in rubric.criteria if c.id not in locked):
            return None  # nothing of it is usable: the whole answer is not evaluable
        ignored = {d: value[d] for d in sorted(locked) if d in value and value[d] != OUT_OF_SCOPE}
        return {"scores": scores, "rationale": rationale, "ignored": ignored}
    return read


# --- fixed answers: a pydantic model each, sent as the same bytes the project always sent -------------
# The schema a judge (and a grammar or ``response_format``) gets is the model's fields in order, each its JSON
# type then its bounds, in a closed object that requires them all, so cached answers and recorded calls match.

class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriterionMet(_Answer):
    """NPCBench's judgement of one case criterion (npcbench.txt): met or not, with why."""

    explanation: str = Field(max_length=1000)
    criteria_met: bool


class DiagnosisMatch(_Answer):
    """Neural-MedBench's judgement of one candidate diagnosis against the reference (L409-420)."""

    rationale: str = Field(max_length=600)
    match: bool


def closed_object_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model`` as a closed JSON object schema: every field required, in the model's order, each
    property its ``type`` first and then its bounds, without pydantic's titles."""
    generated = model.model_json_schema()
    properties = {name: {"type": prop["type"], **{k: v for k, v in prop.items() if k not in ("type", "title")}}
                  for name, prop in generated["properties"].items()}
    if sorted(generated.get("required", [])) != sorted(properties):
        raise ValueError(f"{model.__name__}: every field of a judge answer must be required")
    return {"type": "object", "additionalProperties": False, "required": list(properties), "properties": properties}


SIGNED = OutputSchema(name=CriterionMet.__name__, json_schema=closed_object_schema(CriterionMet))
MATCH = OutputSchema(name=DiagnosisMatch.__name__, json_schema=closed_object_schema(DiagnosisMatch))
