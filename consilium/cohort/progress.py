"""Progress of long commands (a bar on a terminal, one line per item off it), and the running counts of
a cohort's finished arms that its progress shows.

Re-summing every finished row on each arm is quadratic (hours of loop time at 200k arms); the
tally adds each row once, and a row that replaces an earlier one for the same arm takes the earlier
one's share back out, so its counts always equal a re-sum over the latest row of every arm.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["ArmTally", "ItemProgress"]


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


class ItemProgress:
    """A long command's progress on stderr: a bar on a terminal, one line per item off it (a batch job's log).

    ``what`` names the items on the bar ("arms", "traces"); each :meth:`advance` is one item done, with its
    ``label``, its ``status`` and an optional ``tail`` of running counts shown beside the bar and at the end
    of its line: ``[3/10] LABEL: STATUS · TAIL``. stdout is left alone (the command's results). On a
    terminal the finished bar stays as the last line, showing the total, unless ``transient``.
    """

    def __init__(self, what: str, total: int, *, tail: str = "", transient: bool = False,
                 stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.on_terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total, self.done, self.tail = total, 0, tail
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        if self.on_terminal:  # rich (a tenth of a second to import) only where it draws
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[tail]}"), TimeRemainingColumn(),
                                 console=Console(file=self.stream), transient=transient, redirect_stdout=False)
            self._task = self._bar.add_task(what, total=total, tail=tail)

    def __enter__(self) -> ItemProgress:
        if self._bar is not None:
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def advance(self, label: str, status: str, *, tail: str | None = None, done: int | None = None) -> None:
        """One item done: the bar moves on, or its line is written; ``done`` is the count its line shows when
        that is not one more than the last (a cohort's arm run again replaces its earlier row)."""
        self.done = self.done + 1 if done is None else done
        if tail is not None:
            self.tail = tail
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, tail=self.tail)
        else:
            end = f" · {self.tail}" if self.tail else ""
            print(f"[{self.done}/{self.total}] {label}: {status}{end}", file=self.stream, flush=True)
