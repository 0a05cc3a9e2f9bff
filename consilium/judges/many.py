"""Judge many trace files at once, reading each only as its judgement starts.

``cohort --judge`` and ``consilium judge RUN_DIR`` both judge through :func:`judge_files`: at most
``limit`` judgements run at a time (the same number as the model calls in flight, so a one-item
rubric keeps the judge model as busy as the arms kept the panel's), each trace is read when its
judgement starts and let go once ``done`` has it, so memory holds ``limit`` traces, never the
cohort's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from consilium.errors import ConsiliumError, UserError
from consilium.graphs.registry import read_trace
from consilium.judges.jury import judge_by_jury
from consilium.judges.record import Judgement
from consilium.judges.rubric import Rubric
from consilium.judges.runner import AnyTrace, JudgeSetup

__all__ = ["Done", "judge_files"]

#: Called as each judgement finishes: its job's position, the trace file, the trace, its rubric, the judgement.
Done = Callable[[int, Path, AnyTrace, Rubric, Judgement], None]


async def judge_files(jobs: Iterable[tuple[Rubric, Path]], setup: JudgeSetup | Sequence[JudgeSetup], done: Done, *,
                      limit: int,
                      components: list[str] | None = None,
                      read: Callable[[Path], AnyTrace] = read_trace) -> None:
    """Each (rubric, trace file) of ``jobs``, in order, ``limit`` at a time. A :class:`UserError` (an
    unreadable trace) stops the others and is raised; judgements already done stay done. Several setups
    are a jury (consilium/judges/jury.py): every judge scores each trace, and the judgement holds the
    verdicts."""
    setups = [setup] if isinstance(setup, JudgeSetup) else list(setup)
    pending = iter(enumerate(jobs))

    async def worker() -> None:
        for position, (rubric, path) in pending:  # one shared iterator: each worker takes the next job
            trace = read(path)
            judgement = await judge_by_jury(trace, path.name, rubric, setups, components)
            done(position, path, trace, rubric, judgement)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, limit)):
                group.create_task(worker())
    except BaseExceptionGroup as errors:
        # a user's error first, then any other of ours (a replay that diverges): one line, not an internal error
        users = errors.subgroup(UserError) or errors.subgroup(ConsiliumError)
        if users is not None:
            first: BaseException = users
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        raise
