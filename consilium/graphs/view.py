"""What a protocol shows in the viewer, as plain blocks; consilium/reports/viewer.py renders (and escapes) them."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Block", "Diff", "Heading", "Note", "Table", "Text"]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 3


@dataclass(frozen=True)
class Text:
    """Model or case text, shown as written (preformatted)."""

    text: str


@dataclass(frozen=True)
class Note:
    """A short line of the viewer's own; ``label`` is shown bold before it, ``tone`` colours it."""

    text: str
    label: str = ""
    emphasis: bool = False
    tone: str = ""


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    #: Per row, a CSS class per cell ("" for none), e.g. a vote coloured as accept or dissent.
    classes: tuple[tuple[str, ...], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Diff:
    """Two versions of a text, shown side by side in a collapsed section."""

    old: str
    new: str
    old_label: str
    new_label: str
    summary: str


Block = Heading | Text | Note | Table | Diff
