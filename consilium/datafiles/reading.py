"""Reading a user's data file (YAML or JSON) into a pydantic model, with one-line errors.

Every settings file (model configs, experiments, run configs, scripts) and every case file is parsed
here, so a mistake always reads ``<file>: <field.path>: <reason>`` and exits 2. Parsing is strict
in the same way for both formats: duplicate keys, NaN/Infinity, integers of more than
:data:`MAX_INT_DIGITS` digits, NUL characters, lone surrogates, nesting deeper than :data:`MAX_DEPTH`
and YAML aliases that expand past :data:`MAX_VALUES` values or :data:`MAX_TEXT_CHARS` characters are
refused before any value reaches a model; one leading byte-order mark is ignored in both.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from consilium.datafiles.strict_yaml import StrictLoader
from consilium.datafiles.values import (
    DataError,
    DataSyntaxError,
    check_value,
    huge_int,
    json_object,
    too_deep,
    unacceptable_char,
)
from consilium.errors import UserError

__all__ = ["first_error", "load_data_file", "parse_data", "parse_json", "parse_yaml", "read_data_file"]

M = TypeVar("M", bound=BaseModel)


def first_error(exc: ValidationError, prefix: str = "") -> str:
    """``field.path: reason`` of a validation error's first problem."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"{prefix}{where}: {err['msg']}"


def read_data_file(path: Path, what: str) -> Any:
    """The parsed content of a YAML (.yaml/.yml) or JSON file, checked as :func:`parse_data` does."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: {what} not found") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: cannot read the {what} (not UTF-8 text, byte {exc.start})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        return parse_data(text, json_format=path.suffix.lower() == ".json")
    except DataError as exc:
        raise UserError(f"{path}: {exc}") from None


def load_data_file(path: Path, model: type[M], what: str) -> M:
    try:
        return model.model_validate(read_data_file(path, what))
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc)}") from None


def parse_data(text: str, *, json_format: bool) -> Any:
    """Parse JSON or YAML text strictly (see the module docstring); ``None`` for an empty file.

    Raises :class:`DataError`; syntax errors name line and column.
    """
    text = text.removeprefix("\ufeff")  # YAML skips one leading BOM by itself; JSON must do the same
    if json_format:
        return parse_json(text) if text.strip() else None
    return parse_yaml(text)


def parse_json(text: str) -> Any:
    """Strict JSON: no duplicate keys, no NaN/Infinity, no NUL or lone surrogate, bounded depth."""
    try:
        data = json.loads(text, object_pairs_hook=json_object, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        if exc.pos < len(text) and unicodedata.category(text[exc.pos]) == "Cc" and text[exc.pos] not in "\t\n\r":
            raise DataError("", unacceptable_char(text[exc.pos], exc.lineno)) from None
        raise DataSyntaxError("JSON", exc.lineno, exc.colno, exc.msg) from None
    except RecursionError:  # the decoder recurses per level; far past MAX_DEPTH it runs out of stack
        raise DataError("", too_deep()) from None
    check_value(data)
    return data


def _json_int(digits: str) -> Any:
    """``parse_int`` for :func:`json.loads`: an integer too long to convert is kept for :func:`check_value`."""
    return huge_int(digits) or int(digits)


def parse_yaml(text: str) -> Any:
    """Strict YAML (safe tags only): the JSON rules, plus aliases bounded by what they expand to."""
    try:
        loader = StrictLoader(text)  # the reader checks every character here
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow anywhere
        char = chr(exc.character) if isinstance(exc.character, int) else str(exc.character)
        raise DataError("", unacceptable_char(char, text.count("\n", 0, exc.position) + 1)) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        loader.measure(node, "", 1)
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        raise DataSyntaxError("YAML", line, column, problem) from None
    finally:
        loader.dispose()
    check_value(data)
    return data
