"""The library's replay of many traces: each file named, and every ``*.trace.json`` under a folder named (a
cohort keeps them in ``arms/<model>/``), re-run from its recorded calls with zero model calls and compared, what
``consilium replay TRACE|RUN_DIR`` does. One trace object: :func:`consilium.api.runs.replay`."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consilium.api.options import options_of
from consilium.api.sync import sync_twin
from consilium.errors import ReplayDivergenceError, UserError

__all__ = ["ReplayOptions", "Replayed", "ReplayedTraces", "areplay_traces", "replay_traces"]


@dataclass(frozen=True)
class Replayed:
    """One trace file replayed: the first difference (None: identical), the recorded calls that served it, the
    seconds it took, and the protocol's note on the replay (e.g. a board's floor schema)."""

    path: Path
    difference: str | None
    served: int = 0
    seconds: float = 0.0
    note: str = ""

    @property
    def identical(self) -> bool:
        return self.difference is None


@dataclass(frozen=True)
class ReplayedTraces:
    """Every trace replayed, in order, and whether a folder was named (then the command prints a count)."""

    traces: list[Replayed] = field(default_factory=list)
    folders: bool = False

    @property
    def different(self) -> int:
        return sum(not each.identical for each in self.traces)


@dataclass(frozen=True)
class ReplayOptions:
    """``on_each`` hears of each trace as it is replayed (the command prints its line then)."""

    on_each: Callable[[Replayed], None] | None = None


async def areplay_traces(paths: Sequence[str | Path], options: ReplayOptions | None = None,
                         **changes: Any) -> ReplayedTraces:
    """Replay the trace files named and every trace under the folders named; a folder without one is a
    UserError before anything is replayed, a missing or bad file one when its turn comes."""
    chosen = options_of(ReplayOptions, options, changes)
    files, folders = _traces([Path(p) for p in paths])
    done = []
    for path in files:
        each = await _replay(path)
        done.append(each)
        if chosen.on_each is not None:
            chosen.on_each(each)
    return ReplayedTraces(traces=done, folders=folders)


replay_traces = sync_twin(areplay_traces)


def _traces(paths: list[Path]) -> tuple[list[Path], bool]:
    """The files named, and every ``*.trace.json`` under a folder named, in order; and whether a folder was."""
    from consilium.runfolder.layout import trace_files

    files: list[Path] = []
    folders = False
    for path in paths:
        if path.is_dir():
            found = trace_files(path)  # the run's own traces, not a run's nested in it
            if not found:
                raise UserError(f"{path}: no *.trace.json files to replay (searched every subfolder)")
            files += found
            folders = True
        else:
            files.append(path)  # read_trace names a missing or bad file
    return files, folders


async def _replay(path: Path) -> Replayed:
    from consilium.graphs.registry import protocol_of, read_trace
    from consilium.graphs.replay import first_difference, replay_trace

    trace = read_trace(path)
    started = time.perf_counter()
    try:
        replayed, model = await replay_trace(trace)
    except ReplayDivergenceError as exc:
        return Replayed(path=path, difference=str(exc))
    difference = first_difference(trace, replayed)
    elapsed = time.perf_counter() - started
    if difference is not None:
        return Replayed(path=path, difference=difference)
    return Replayed(path=path, difference=None, served=model.served, seconds=elapsed,
                    note=protocol_of(trace).replay_note(trace, replayed) or "")
