"""A run's record as a whole-case judge reads it: sections a protocol gives (consilium/judges/whole_case.py fits
them to the judge's context)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from consilium.redact import redact

__all__ = ["RecordSection", "shorten"]


@dataclass(frozen=True)
class RecordSection:
    """One section of a run's record as a judge reads it (``tag`` names the prompt section it goes in):
    ``head`` is ours and kept whole; ``body`` may be shortened to fit the judge's context, sections of a
    lower ``group`` first (None: never)."""

    tag: str
    name: str
    head: str
    body: str
    group: int | None

    def text(self, keep: int | None = None) -> str:
        body = self.body if keep is None else shorten(self.body, keep)[0]
        return f"{self.head}\n{body}" if body else self.head


def shorten(text: str, keep: int) -> tuple[str, int]:
    """``text`` with at most ``keep`` of its characters, its start and its end, and a marker where the
    middle was cut, and the number kept; ``text`` itself when it is no longer than that. Secrets are
    masked first (consilium/redact.py): a cut through a key would leave its start unmasked."""
    text = redact(text)
    if keep >= len(text):
        return text, len(text)
    keep = max(keep, 0)
    head = text[:math.ceil(keep * 2 / 3)]
    tail = text[len(text) - (keep - len(head)):] if keep > len(head) else ""
    # end the head and start the tail at a word boundary when one is near
    if head.rfind(" ") >= len(head) // 2 > 0:
        head = head[:head.rfind(" ")]
    if 0 <= tail.find(" ") < len(tail) // 2:
        tail = tail[tail.find(" ") + 1:]
    head, tail = head.rstrip(), tail.lstrip()
    kept = len(head) + len(tail)
    marker = f"[… shortened: {kept} of {len(text)} characters kept …]"
    return "\n".join(part for part in (head, marker, tail) if part), kept
