"""Structured output: a pydantic model or a JSON schema in, a validated JSON value out.

Backends use :attr:`OutputSchema.json_schema` to constrain decoding the way
their server supports; :meth:`OutputSchema.validate` always checks the text
afterwards, because no server's constraint is trusted on its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache, cached_property, lru_cache
from typing import Any

import jsonschema
import jsonschema.protocols
import jsonschema.validators
from pydantic import BaseModel, ValidationError

__all__ = ["OutputInvalid", "OutputSchema", "extract_json"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class OutputInvalid(ValueError):
    """The text is not valid JSON for the schema; the message is fit to send back to the model."""


def extract_json(text: str) -> Any:
    """Parse JSON from a model's text, tolerating code fences and prose around one object."""
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            # strict=False: tolerate raw control characters inside strings (small models emit tabs).
            return json.loads(candidate, strict=False)
        except json.JSONDecodeError as exc:
            error = error or exc
    detail = f"{error.msg} at line {error.lineno} column {error.colno}" if error else "empty output"
    raise OutputInvalid(f"the output is not valid JSON ({detail})")


@lru_cache(maxsize=512)
def _compiled(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


@dataclass(frozen=True)
class OutputSchema:
    """A named output contract: a JSON schema, optionally backed by a pydantic model that
    validates it, or (``json_schema=None``) a text check such as the board transcript format.

    ``check`` takes the text and returns the validated value or raises :class:`OutputInvalid`.
    """

    name: str
    json_schema: dict[str, Any] | None
    model: type[BaseModel] | None = field(default=None, compare=False)
    check: Callable[[str], Any] | None = field(default=None, compare=False)
    #: False: the schema is only described in the prompt and validated afterwards; backends
    #: do not constrain decoding (the judges' first attempts, NPCBench's protocol).
    enforce: bool = True
    #: The JSON schema is the model's own, unchanged: pydantic's strict validation of the model checks
    #: exactly what it says, and the JSON-schema pass is skipped (it cost more than the rest of a call).
    model_only: bool = field(default=False, compare=False, repr=False)
    #: What a repair asks for instead of "one JSON object" (wrappers/repair.py): a text check's answer is text.
    repair: str | None = field(default=None, compare=False)

    def unenforced(self) -> OutputSchema:
        return replace(self, enforce=False)

    @classmethod
    def from_check(cls, name: str, check: Callable[[str], Any], *, repair: str | None = None) -> OutputSchema:
        return cls(name=name, json_schema=None, check=check, repair=repair)

    @classmethod
    def from_model(cls, model: type[BaseModel]) -> OutputSchema:
        """The schema of a pydantic model, built once per model (pydantic's schema generation is slow)."""
        return _model_schema(model)

    @classmethod
    def from_json_schema(cls, schema: dict[str, Any], name: str = "output") -> OutputSchema:
        jsonschema.Draft202012Validator.check_schema(schema)
        return cls(name=name, json_schema=schema)

    def validate(self, text: str) -> Any:
        """Return the validated value (for JSON, a model's ``model_dump(mode="json")``)."""
        if self.check is not None:
            return self.check(text)
        value = extract_json(text)
        if not self.model_only:
            try:
                self._validator().validate(value)
            except jsonschema.ValidationError as exc:
                where = ".".join(str(p) for p in exc.absolute_path) or "(root)"
                raise OutputInvalid(f"the JSON does not match the {self.name} schema: {where}: {exc.message}") \
                    from None
        if self.model is not None:
            try:
                return self.model.model_validate(value, strict=self.model_only).model_dump(mode="json")
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                    for err in exc.errors()[:5]
                )
                raise OutputInvalid(f"the JSON does not match the {self.name} schema: {problems}") from None
        return value

    def _validator(self) -> jsonschema.protocols.Validator:
        """The compiled validator, built once per schema (compiling it on every call cost more than
        everything else consilium does per call; see benchmarks/results.md)."""
        return _compiled(self._canonical if self.json_schema else "{}")

    def canonical(self) -> str:
        """Stable text of the schema, for cache keys and trace hashes."""
        return self._canonical

    @cached_property
    def _canonical(self) -> str:
        # Computed once per instance: the schema is treated as immutable once built.
        return json.dumps(self.json_schema or {"check": self.name}, sort_keys=True, separators=(",", ":"))


@cache
def _model_schema(model: type[BaseModel]) -> OutputSchema:
    return OutputSchema(name=model.__name__, json_schema=model.model_json_schema(), model=model, model_only=True)
