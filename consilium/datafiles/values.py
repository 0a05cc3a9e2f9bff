"""The rules every value of a user's data file must keep, whichever format it came in: finite numbers,
integers of at most :data:`MAX_INT_DIGITS` digits, text without NUL characters or lone surrogates, unique
keys, nesting at most :data:`MAX_DEPTH` deep; and the errors that say which rule a file broke, and where.
"""

from __future__ import annotations

import math
from typing import Any

from consilium.redact import clip

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_TEXT_CHARS",
    "MAX_VALUES",
    "DataError",
    "DataSyntaxError",
    "HugeInt",
    "check_value",
    "huge_int",
    "join_path",
    "json_object",
    "short_path",
    "too_deep",
    "unacceptable_char",
]

#: Deepest nesting accepted (the top-level value is level 1); real files stay under 10.
MAX_DEPTH = 64
#: Most values (scalars and containers) a YAML document may expand to, each alias counted as a copy.
MAX_VALUES = 100_000
#: Most characters of text a YAML document may expand to, each alias counted as a copy.
MAX_TEXT_CHARS = 10_000_000
#: Most digits an integer may have: Python's default limit on converting an integer to or from decimal
#: text (sys.int_info.default_max_str_digits), past which parsing, printing or writing it as JSON fails.
MAX_INT_DIGITS = 4300
_INT_BOUND = 10**MAX_INT_DIGITS


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


class HugeInt(str):
    """The digits of an integer too long to convert (more than :data:`MAX_INT_DIGITS`), kept as text by the
    parsers so that :func:`check_value` can refuse it at its path instead of the parser failing without one."""


def huge_int(literal: str) -> HugeInt | None:
    """``literal`` (an integer literal: sign, digits, YAML's ``_``) as a :class:`HugeInt` when it is a decimal
    of more digits than :data:`MAX_INT_DIGITS`; None when it converts. Only decimal text has the limit: YAML's
    ``0b``, ``0x`` and octal (``0`` first) literals convert at any length, and :func:`check_value` refuses
    the value when its decimal digits are past the limit."""
    digits = literal.replace("_", "").lstrip("+-")
    if digits.startswith(("0b", "0x")) or (digits.startswith("0") and digits != "0"):
        return None  # bases 2, 16 and 8 convert at any length
    longest = max(len(part) for part in digits.split(":"))  # a sexagesimal's parts are each converted
    return HugeInt(literal) if longest > MAX_INT_DIGITS else None


def _huge(value: Any) -> str | None:
    """Why an integer (or a key that is one) cannot be held, if it cannot."""
    if isinstance(value, HugeInt):
        return f"an integer of {sum(char.isdigit() for char in value):,} digits; at most {MAX_INT_DIGITS:,} are allowed"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_BOUND:
        return f"an integer of more than {MAX_INT_DIGITS:,} digits; at most {MAX_INT_DIGITS:,} are allowed"
    return None


def check_value(value: Any, path: str = "", depth: int = 1) -> None:
    """Refuse NaN/Infinity, integers past :data:`MAX_INT_DIGITS` digits, NUL, lone surrogates, duplicate JSON
    keys and nesting past :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise DataError(short_path(path), too_deep())
    huge = _huge(value)
    if huge is not None:
        raise DataError(path, huge)
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
            raise DataError(join_path(path, value.duplicate), "duplicate key (set more than once in this object)")
        for key, item in value.items():
            huge = _huge(key)
            if huge is not None:
                raise DataError(path, f"a key is {huge}")
            if isinstance(key, str):
                _check_text(key, path, f"key {_label(key)}")
            elif isinstance(key, float) and not math.isfinite(key):
                raise DataError(path, f"key {key!r} is not a number this file may hold")
            check_value(item, join_path(path, key), depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            check_value(item, join_path(path, index), depth + 1)


def _check_text(text: str, path: str, what: str) -> None:
    if "\0" in text:
        raise DataError(path, f"{what} holds a NUL character (U+0000)")
    for char in text:
        if "\ud800" <= char <= "\udfff":
            raise DataError(path, f"{what} holds a lone surrogate ({_codepoint(char)}), which is not valid Unicode")


def unacceptable_char(char: str, line: int) -> str:
    """The reason for refusing a character no text file may hold, at ``line``."""
    what = "a NUL character" if char == "\0" else "the non-printable character"
    return f"line {line} holds {what} ({_codepoint(char)}), which a text file may not contain"


def _codepoint(char: str) -> str:
    return f"U+{ord(char):04X}"


def join_path(path: str, key: Any) -> str:
    """``path`` one level down, at ``key`` (a mapping key or a list index)."""
    part = _label(key)
    return f"{path}.{part}" if path else part


def _label(key: Any) -> str:
    """A key as it may appear in a one-line message: printable, and short."""
    text = str(key)
    if not text.isprintable() or not text:
        text = ascii(key)
    return text if len(text) <= 60 else clip(text, 57) + "..."  # masked before it is cut


def short_path(path: str) -> str:
    """A path cut to its first levels, for nesting errors whose path is as long as the nesting."""
    parts = path.split(".")
    return path if len(parts) <= 6 else ".".join(parts[:4]) + "..."


def too_deep() -> str:
    """The reason for refusing a value nested past :data:`MAX_DEPTH`."""
    return f"nested more than {MAX_DEPTH} levels deep"


class _DuplicateKeys(dict[str, Any]):
    """A JSON object that set ``duplicate`` twice; :func:`check_value` reports it with its path."""

    duplicate: str = ""


def json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads` that marks a repeated key for :func:`check_value`."""
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
