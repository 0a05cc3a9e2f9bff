"""Running counts of a cohort's finished arms, for its progress line.

Re-summing every finished row on each arm is quadratic (hours of loop time at 200k arms); the
tally adds each row once, and a row that replaces an earlier one for the same arm takes the earlier
one's share back out, so its counts always equal a re-sum over the latest row of every arm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ArmTally"]


def _tokens(row: dict[str, Any]) -> int:
    return int(row.get("input_tokens") or 0) + int(row.get("output_tokens") or 0)


@dataclass
class ArmTally:
    """Arms finished, failed (any status but completed), resumed, and tokens as generated."""

    done: int = 0
    failed: int = 0
    resumed: int = 0
    tokens: int = 0

    def _apply(self, row: dict[str, Any], sign: int) -> None:
        self.done += sign
        self.failed += sign * (row["status"] != "completed")
        self.resumed += sign * bool(row.get("resumed"))
        self.tokens += sign * _tokens(row)

    def add(self, row: dict[str, Any], replaces: dict[str, Any] | None = None) -> None:
        """Count ``row``; ``replaces`` is the earlier row of the same arm, if there was one."""
        if replaces is not None:
            self._apply(replaces, -1)
        self._apply(row, 1)
