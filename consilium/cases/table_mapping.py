"""The mapping file of ``cases import table``: which column or key of a data set fills which case field.

A mapping names case fields by dotted path (``reference.diagnosis``, ``sections.history``,
``metadata.year``) and, for each, the record's column or key (``"Final Name"``, or a dotted path into
nested records, ``patient.history``), optionally decoded from JSON text (``{from: "Sections JSON",
decode: json}``, with ``select: History`` to take one key of what it decodes to) or given a prefix
(``{from: Number, prefix: nejm-}``). ``values`` sets constants, e.g. the question every record shares.
The model forbids unknown keys, and every path is checked against the case model when the mapping is
read, so a typo is one line naming the mapping file and field rather than a thousand failed records;
each field's line in the mapping file is kept, so a source no record has is reported at its line.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator
from yaml.nodes import MappingNode, ScalarNode

from consilium.cases.model import Case
from consilium.datafiles import read_data_file
from consilium.datafiles.strict_yaml import StrictLoader
from consilium.errors import UserError

__all__ = ["TableFormat", "TableMapping", "TableSource", "case_path_takes_text", "load_mapping"]

TableFormat = Literal["json", "jsonl", "csv"]


class TableSource(BaseModel):
    """Where one case field comes from: a column (CSV) or top-level key (JSON) of the record."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from", min_length=1, description="the column or key holding the value; a dotted "
                       "path (patient.history) reaches into nested records when no key has the whole name")
    decode: Literal["json"] | None = Field(default=None, description="'json': the value is JSON text to decode")
    select: str | None = Field(default=None, min_length=1, description="a dotted key path into the decoded JSON "
                               "(decode: json only): the part of it this field takes")
    prefix: str = Field(default="", description="text put before the value, e.g. 'nejm-' for ids")

    @field_validator("select")
    @classmethod
    def _decoded_only(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("decode") != "json":
            raise ValueError("select picks a part of decoded JSON text; add decode: json")
        return value

    def describe(self) -> str:
        """The source as one message names it: ``'Sections JSON' (decoded, at History)``."""
        return repr(self.from_) + (f" (decoded, at {self.select})" if self.select else "")


class TableMapping(BaseModel):
    """A whole mapping file; see docs/cases.md, "Importing your own tables"."""

    model_config = ConfigDict(extra="forbid")

    format: TableFormat | None = Field(default=None, description="json, jsonl or csv; default: the file's suffix")
    records: str | None = Field(default=None, min_length=1,
                                description="JSON only: the (dotted) key of the list of records")
    values: dict[str, Any] = Field(default_factory=dict, description="case field path -> constant value")
    fields: dict[str, TableSource] = Field(min_length=1, description="case field path -> source")
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)

    def where(self, path: str) -> str:
        """Where field ``path`` is set in the mapping file: ``line 7: fields.reference.diagnosis``."""
        line = self._lines.get(path)
        return (f"line {line}: " if line is not None else "") + f"fields.{path}"

    @field_validator("records")
    @classmethod
    def _json_only(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("format") not in (None, "json"):
            raise ValueError("records applies to JSON files only")
        return value

    @field_validator("fields", mode="before")
    @classmethod
    def _plain_names(cls, value: Any) -> Any:
        """``question: Vignette`` is short for ``question: {from: Vignette}``."""
        if isinstance(value, dict):
            return {key: {"from": item} if isinstance(item, str) else item for key, item in value.items()}
        return value

    @field_validator("values")
    @classmethod
    def _known_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_paths(value)

    @field_validator("fields")
    @classmethod
    def _complete(cls, value: dict[str, TableSource], info: ValidationInfo) -> dict[str, TableSource]:
        _check_paths(value)
        constants = info.data.get("values") or {}
        both = sorted(set(value) & set(constants))
        if both:
            raise ValueError(f"{both[0]!r} is in both fields and values; give it one source")
        if "id" not in value:
            raise ValueError("id is required: each record needs its own case id (ids name the files)")
        # A tumor board needs no question (consilium/cases/model.py); a mapping that may make one (kind from a
        # column, or the constant tumor_board) leaves the question to each record's own check.
        boards = "kind" in value or constants.get("kind") == "tumor_board"
        required = [n for n, f in Case.model_fields.items() if f.is_required()] + ([] if boards else ["question"])
        for name in required:
            if name not in value and name not in constants:
                raise ValueError(f"no source for the required case field {name!r}; add it to fields or values")
        return value


def _check_paths(value: dict[str, Any]) -> dict[str, Any]:
    for path in value:
        problem = _path_problem(path)
        if problem:
            raise ValueError(f"{path!r}: {problem}")
    return value


def load_mapping(path: Path) -> TableMapping:
    """Read and check a mapping file; a mistake is a :class:`UserError` ``<mapping file>: <field>: <reason>``."""
    data = read_data_file(path, "mapping file")
    if data is None:
        raise UserError(f"{path}: the mapping file is empty; it needs at least fields.id (docs/cases.md)")
    try:
        mapping = TableMapping.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # A misspelt key also leaves a required one missing; the misspelling is the one to report.
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        reason = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            reason = "unknown key in a mapping file (check the spelling; see docs/cases.md)"
        raise UserError(f"{path}: {where}: {reason}") from None
    if path.suffix.lower() != ".json":
        mapping._lines = _field_lines(path.read_text(encoding="utf-8"))
    return mapping


def _field_lines(text: str) -> dict[str, int]:
    """The line of each key under ``fields:`` of a YAML mapping file (read once already by the strict reader,
    so composing its nodes again is safe)."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError:
        return {}
    finally:
        loader.dispose()
    if not isinstance(node, MappingNode):
        return {}
    for key, value in node.value:
        if isinstance(key, ScalarNode) and key.value == "fields" and isinstance(value, MappingNode):
            return {k.value: k.start_mark.line + 1 for k, _ in value.value if isinstance(k, ScalarNode)}
    return {}


def _unwrap(annotation: Any) -> list[Any]:
    """The alternatives of an annotation, ``None`` left out: ``Reference | None`` -> ``[Reference]``."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [alt for arg in typing.get_args(annotation) for alt in _unwrap(arg) if alt is not type(None)]
    return [annotation]


def _leaf(path: str) -> tuple[Any, str | None]:
    """The annotation a case path ends at, or a reason it names no case field."""
    model: type[BaseModel] = Case
    parts = path.split(".")
    for depth, part in enumerate(parts):
        info = model.model_fields.get(part)
        if info is None:
            where = ".".join(parts[:depth]) or "a case"
            return None, f"{where} has no field {part!r} (fields: {', '.join(model.model_fields)})"
        alternatives = _unwrap(info.annotation)
        rest = parts[depth + 1:]
        if not rest:
            return info.annotation, None
        if any(typing.get_origin(alt) is dict for alt in alternatives):
            return Any, None  # metadata: any key below it
        inner = [alt for alt in alternatives if isinstance(alt, type) and issubclass(alt, BaseModel)]
        if not inner:
            return None, f"{'.'.join(parts[: depth + 1])} is a single value; it has no fields"
        model = inner[0]
    return None, "empty path"


def _path_problem(path: str) -> str | None:
    if not path or any(not part for part in path.split(".")):
        return "not a dotted case field path such as reference.diagnosis"
    return _leaf(path)[1]


def case_path_takes_text(path: str) -> bool:
    """Whether the field at ``path`` holds text, so a number read from JSON is turned into a string."""
    annotation, problem = _leaf(path)
    return problem is None and _unwrap(annotation) == [str]
