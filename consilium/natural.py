"""Natural order for identifiers: ``mac-2`` before ``mac-10``, as a person reads a list of cases."""

from __future__ import annotations

import re

__all__ = ["natural_key"]

_PARTS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """A sort key that compares runs of digits as numbers and the rest case-insensitively.

    Each part is tagged (0 for a number, 1 for text) so a number and a word never compare
    directly; a number compares by its length without leading zeros, then its digits, so no
    digit string is ever converted (Python refuses ``int`` of more than 4,300 digits). Ties
    between spellings that differ only in case or leading zeros fall back to the text itself.
    """
    parts: list[tuple[int, int, str]] = []
    for index, part in enumerate(_PARTS.split(text)):
        if index % 2:
            digits = part.lstrip("0") or "0"
            parts.append((0, len(digits), digits))
        elif part:
            parts.append((1, 0, part.casefold()))
    parts.append((1, 0, text))
    return tuple(parts)
