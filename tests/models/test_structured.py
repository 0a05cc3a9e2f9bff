from __future__ import annotations

import pytest
from pydantic import BaseModel

from consilium.models import OutputInvalid, OutputSchema
from consilium.models.structured import extract_json


class Pick(BaseModel):
    choice: int


def test_json_is_found_in_fences_and_prose() -> None:
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Sure! Here it is: {"a": [1, 2]} hope that helps') == {"a": [1, 2]}
    with pytest.raises(OutputInvalid, match="not valid JSON"):
        extract_json("no json here")


def test_pydantic_and_json_schema_validation_messages() -> None:
    assert OutputSchema.from_model(Pick).validate('{"choice": 3}') == {"choice": 3}
    # A model's own schema is checked by pydantic in strict mode: no coercion of "3" or "true".
    with pytest.raises(OutputInvalid, match="Pick schema: choice: Input should be a valid integer"):
        OutputSchema.from_model(Pick).validate('{"choice": "many"}')
    with pytest.raises(OutputInvalid, match="choice: Input should be a valid integer"):
        OutputSchema.from_model(Pick).validate('{"choice": "3"}')
    raw = OutputSchema.from_json_schema({"type": "object", "properties": {"n": {"type": "integer"}},
                                         "required": ["n"]})
    with pytest.raises(OutputInvalid, match="'n' is a required property"):
        raw.validate("{}")
