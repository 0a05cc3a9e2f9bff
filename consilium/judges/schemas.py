"""The fixed answers a judge returns, as pydantic models, and the compact JSON schema each is sent as.

The schema a judge (and a grammar or ``response_format``) gets is the model's fields in order, each
its JSON type then its bounds, in a closed object that requires them all: the same bytes the
project always sent, so cached answers and recorded calls still match. Rubric-shaped answers (a
criterion's score and flags, the four decisions) depend on the rubric and are built in answers.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from consilium.models import OutputSchema

__all__ = ["MATCH", "SIGNED", "CriterionMet", "DiagnosisMatch", "closed_object_schema"]


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
