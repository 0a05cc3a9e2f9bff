"""Partitions of a cohort's cases: ``cohort --shard I/N`` for a batch scheduler, and one partition per
worker under Ray.

A case belongs to a partition by a stable hash of its id — ``int(sha256(id)[:8], 16) % N`` — never by
its position in the folder, so a case always lands in the same shard however the folder is listed,
whichever other cases it holds, and on whichever machine (docs/scale.md, "Shards and merge").
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Shard", "partition", "partition_of"]

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"`` with 1 ≤ I ≤ N; a ValueError naming what is wrong otherwise."""
        first, slash, second = text.strip().partition("/")
        try:
            index, count = int(first), int(second)
        except ValueError:
            raise ValueError(f"{text!r} is not I/N (e.g. 1/4: the first of four shards)") from None
        if not slash or count < 1 or not 1 <= index <= count:
            raise ValueError(f"{text!r}: I/N needs 1 ≤ I ≤ N (e.g. 1/4: the first of four shards)")
        return cls(index, count)

    def holds(self, case_id: str) -> bool:
        return partition_of(case_id, self.count) == self.index - 1


def partition_of(case_id: str, count: int) -> int:
    """The 0-based partition of ``count`` that a case id falls in; the same on every machine and run."""
    return int(hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:8], 16) % count


def partition(items: Sequence[T], ids: Sequence[str], count: int) -> list[list[T]]:
    """``items`` (whose case ids are ``ids``) in ``count`` partitions, each in the items' order."""
    parts: list[list[T]] = [[] for _ in range(count)]
    for item, case_id in zip(items, ids, strict=True):
        parts[partition_of(case_id, count)].append(item)
    return parts
