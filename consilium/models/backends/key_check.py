"""A key a backend sends in a header, checked before any call: a pasted key with a trailing newline (or any
whitespace or control character) is refused in one line naming the variable it came from, never the key.
Sent as it is, it breaks the request's header: an internal error, or a connection failure retried to the end
(docs/reliability.md, "Secrets")."""

from __future__ import annotations

import os

from consilium.errors import UserError
from consilium.redact import KEY_VARIABLES

__all__ = ["check_key"]

_CHARACTER_NAMES = {"\r": "a carriage return (\\r)", "\n": "a line feed (\\n)", "\t": "a tab (\\t)", " ": "a space"}


def check_key(key: str) -> None:
    """Refuse a key with whitespace, a control character or a non-ASCII character, naming the variable it
    came from and the character."""
    position, bad = next(((i, ch) for i, ch in enumerate(key)
                          if ch.isspace() or not ch.isprintable() or not ch.isascii()), (-1, ""))
    if not bad:
        return
    character = _CHARACTER_NAMES.get(bad, f"the character U+{ord(bad):04X}")
    where = "ends with" if not key[position:].strip() else "starts with" if not key[:position + 1].strip() else "holds"
    raise UserError(f"{_key_source(key)} {where} {character}; an API key has no whitespace or control "
                    "characters (a paste mistake?): set it again without it")


def _key_source(key: str) -> str:
    """The environment variable that holds ``key`` (``$OPENAI_API_KEY`` first, else the first by name), or
    "the API key" when it came from elsewhere (the Python API)."""
    names = [n for n in KEY_VARIABLES if os.environ.get(n) == key]
    names += sorted(n for n, value in os.environ.items() if value == key and n not in names)
    return f"${names[0]}" if names else "the API key"
