"""Reading a user's data file (YAML or JSON) into a pydantic model, with one-line errors.

Every settings file (model configs, experiments, run configs, scripts) and every case file is parsed
here, so a mistake always reads ``<file>: <field.path>: <reason>`` and exits 2. Parsing is strict
in the same way for both formats: duplicate keys, NaN/Infinity, NUL characters, lone surrogates,
nesting deeper than :data:`MAX_DEPTH` and YAML aliases that expand past :data:`MAX_VALUES` values
or :data:`MAX_TEXT_CHARS` characters are refused before any value reaches a model; one leading
byte-order mark is ignored in both.
"""

from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from consilium.errors import UserError

__all__ = [
    "MAX_DEPTH",
    "MAX_TEXT_CHARS",
    "MAX_VALUES",
    "DataError",
    "DataSyntaxError",
    "first_error",
    "load_data_file",
    "parse_data",
    "parse_json",
    "parse_yaml",
    "read_data_file",
]

M = TypeVar("M", bound=BaseModel)

#: Deepest nesting accepted (the top-level value is level 1); real files stay under 10.
MAX_DEPTH = 64
#: Most values (scalars and containers) a YAML document may expand to, each alias counted as a copy.
MAX_VALUES = 100_000
#: Most characters of text a YAML document may expand to, each alias counted as a copy.
MAX_TEXT_CHARS = 10_000_000

_MERGE_TAG = "tag:yaml.org,2002:merge"


class DataError(ValueError):
    """A parse-level problem: ``field`` is a dotted path (empty for the whole file), ``reason`` says what."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


class DataSyntaxError(DataError):
    """The text is not JSON or YAML at all; ``line`` and ``column`` are 1-based, ``message`` the parser's."""

    def __init__(self, language: str, line: int | None, column: int | None, message: str) -> None:
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__("", f"{language} syntax error{where}: {message}")
        self.line = line
        self.column = column
        self.message = message


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
        data = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        if exc.pos < len(text) and unicodedata.category(text[exc.pos]) == "Cc" and text[exc.pos] not in "\t\n\r":
            raise DataError("", _unacceptable(text[exc.pos], exc.lineno)) from None
        raise DataSyntaxError("JSON", exc.lineno, exc.colno, exc.msg) from None
    except RecursionError:  # the decoder recurses per level; far past MAX_DEPTH it runs out of stack
        raise DataError("", _too_deep()) from None
    check_value(data)
    return data


def parse_yaml(text: str) -> Any:
    """Strict YAML (safe tags only): the JSON rules, plus aliases bounded by what they expand to."""
    try:
        loader = _StrictLoader(text)  # the reader checks every character here
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow anywhere
        char = chr(exc.character) if isinstance(exc.character, int) else str(exc.character)
        raise DataError("", _unacceptable(char, text.count("\n", 0, exc.position) + 1)) from None
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


def check_value(value: Any, path: str = "", depth: int = 1) -> None:
    """Refuse NaN/Infinity, NUL, lone surrogates, duplicate JSON keys and nesting past :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise DataError(_short(path), _too_deep())
    if isinstance(value, str):
        _check_text(value, path, "text")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise DataError(path, f"{value!r} is not a number this file may hold (NaN and Infinity are refused)")
    elif isinstance(value, bytes):
        if b"\0" in value:
            raise DataError(path, "binary value holds a NUL byte")
    elif isinstance(value, dict):
        if isinstance(value, _DuplicateKeys):
            raise DataError(_join(path, value.duplicate), "duplicate key (set more than once in this object)")
        for key, item in value.items():
            if isinstance(key, str):
                _check_text(key, path, f"key {_label(key)}")
            elif isinstance(key, float) and not math.isfinite(key):
                raise DataError(path, f"key {key!r} is not a number this file may hold")
            check_value(item, _join(path, key), depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            check_value(item, _join(path, index), depth + 1)


def _check_text(text: str, path: str, what: str) -> None:
    if "\0" in text:
        raise DataError(path, f"{what} holds a NUL character (U+0000)")
    for char in text:
        if "\ud800" <= char <= "\udfff":
            raise DataError(path, f"{what} holds a lone surrogate ({_codepoint(char)}), which is not valid Unicode")


def _unacceptable(char: str, line: int) -> str:
    what = "a NUL character" if char == "\0" else "the non-printable character"
    return f"line {line} holds {what} ({_codepoint(char)}), which a text file may not contain"


def _codepoint(char: str) -> str:
    return f"U+{ord(char):04X}"


def _join(path: str, key: Any) -> str:
    part = _label(key)
    return f"{path}.{part}" if path else part


def _label(key: Any) -> str:
    """A key as it may appear in a one-line message: printable, and short."""
    text = str(key)
    if not text.isprintable() or not text:
        text = ascii(key)
    return text if len(text) <= 60 else text[:57] + "..."


def _short(path: str) -> str:
    """A path cut to its first levels, for nesting errors whose path is as long as the nesting."""
    parts = path.split(".")
    return path if len(parts) <= 6 else ".".join(parts[:4]) + "..."


def _too_deep() -> str:
    return f"nested more than {MAX_DEPTH} levels deep"


class _DuplicateKeys(dict[str, Any]):
    """A JSON object that set ``duplicate`` twice; :func:`check_value` reports it with its path."""

    duplicate: str = ""


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    marked = _DuplicateKeys(result)
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


class _StrictLoader(yaml.SafeLoader):
    """Safe loader that bounds depth while composing and measures the node graph before building values.

    Composing never expands an alias (an alias is the same node again), so measuring each node once
    gives the expanded size of even a "billion laughs" document in microseconds, before it can cost
    memory.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._measured: dict[int, tuple[int, int, int]] = {}
        self._active: set[int] = set()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # The composer recurses once per level; stop long before Python's stack does.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
                raise DataError("", f"{_too_deep()} (line {line})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def measure(self, node: Node, path: str, depth: int) -> tuple[int, int, int]:
        """(values, characters, height) of ``node`` as if its aliases were copies; raises on a limit."""
        if depth > MAX_DEPTH:
            raise DataError(_short(path), _too_deep())
        key = id(node)
        size = self._measured.get(key)
        if size is None:
            if key in self._active:
                raise DataError(path, "a YAML alias refers to the value that contains it")
            self._active.add(key)
            size = self._measure_children(node, path, depth)
            self._active.discard(key)
            self._measured[key] = size
        if depth + size[2] - 1 > MAX_DEPTH:
            raise DataError(_short(path), f"{_too_deep()} (once its YAML aliases are expanded)")
        return size

    def _measure_children(self, node: Node, path: str, depth: int) -> tuple[int, int, int]:
        if isinstance(node, ScalarNode):
            return 1, len(node.value), 1
        values, chars, height = 1, 0, 1
        for child_path, child in self._children(node, path):
            child_values, child_chars, child_height = self.measure(child, child_path, depth + 1)
            values += child_values
            chars += child_chars
            height = max(height, child_height + 1)
            if values > MAX_VALUES:
                raise DataError("", f"YAML aliases expand this file to more than {MAX_VALUES:,} values; "
                                    "write the repeated part out or drop the aliases")
            if chars > MAX_TEXT_CHARS:
                raise DataError("", f"YAML aliases expand this file to more than {MAX_TEXT_CHARS:,} characters; "
                                    "write the repeated part out or drop the aliases")
        return values, chars, height

    def _children(self, node: Node, path: str) -> list[tuple[str, Node]]:
        if isinstance(node, SequenceNode):
            return [(_join(path, index), item) for index, item in enumerate(node.value)]
        if not isinstance(node, MappingNode):
            return []
        children: list[tuple[str, Node]] = []
        lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            children.append((path, key_node))
            if key_node.tag == _MERGE_TAG:  # `<<: *base` may be overridden by the keys beside it
                children.append((path, value_node))
                continue
            key = self.construct_object(key_node, deep=True) if isinstance(key_node, ScalarNode) else key_node
            line = key_node.start_mark.line + 1
            first = lines.get(key)  # a scalar key is hashable; a collection key stands as its node
            lines.setdefault(key, line)
            if first is not None:
                raise DataError(_join(path, key), f"duplicate key (set at lines {first} and {line})")
            children.append((_join(path, key), value_node))
        return children
