"""A seated run answered from the browser, in the server's own process: the answer source that asks the page,
and the runs it is continuing.

A resume (:func:`consilium.cohort.seated_session.resume`) runs as an asyncio task holding the run folder's lock.
Where the run needs the person, :class:`BrowserAnswers` takes the answer from the run's answers file if it holds
one (source ``file``, as ``simulate --resume`` would), else publishes the prompt as the run's current turn and
waits for the page to post the answer (source ``web``). An answer is checked as the terminal checks one
(:func:`~consilium.graphs.consilium.seat.check_answer`) before the run sees it: a refused one is said on the page
and the run keeps waiting at the same prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from consilium.cohort.seated import SeatedSettings
from consilium.cohort.seated_session import Resumed, read_session, resume, session_path
from consilium.errors import UserError
from consilium.graphs.consilium.answers import AnswerMissing, Given, MappingAnswers, load_answers
from consilium.graphs.consilium.seat import AnswerInvalid, HumanPrompt, check_answer
from consilium.redact import redact

__all__ = ["BrowserAnswers", "Seating", "Seats", "State", "Turn"]

State = Literal["working", "asking", "finished", "failed"]
#: Where the manifest of a run finished from the browser says it was written.
COMMAND = ("consilium", "serve", "seat")
_LOG = logging.getLogger("consilium.web.seat")


@dataclass
class Turn:
    """One prompt the run waits at for the page: its number in this session (the page follows it), the prompt,
    the answer to come, and why the answers file's answer was not taken (if it held one)."""

    number: int
    prompt: HumanPrompt
    answer: asyncio.Future[Any]
    note: str | None = None


class BrowserAnswers:
    """The person's answers from the page; the run's answers file first where it holds one; answers the page
    gave before the run asked (``given``: by prompt key) when it asks."""

    name = "web"
    where = "browser"

    def __init__(self, file: MappingAnswers | None = None, given: dict[str, Any] | None = None) -> None:
        self._file, self._given = file, dict(given or {})
        self._lock = asyncio.Lock()
        self._count = 0
        self.turn: Turn | None = None

    async def answer(self, prompt: HumanPrompt) -> Any:
        async with self._lock:  # one prompt at a time on the page, whichever format asks first
            if prompt.key in self._given:
                return Given(self._given.pop(prompt.key), self.name)  # checked when the page gave it
            note = None
            if self._file is not None:
                try:
                    found = await self._file.answer(prompt)
                    check_answer(prompt, found)
                    return Given(found, self._file.name)
                except AnswerMissing:
                    pass
                except AnswerInvalid as exc:
                    note = f"{self._file.where}: {exc.at(prompt.key)}; it was not taken: answer here"
            self._count += 1
            turn = Turn(self._count, prompt, asyncio.get_running_loop().create_future(), note)
            self.turn = turn
            try:
                return Given(await turn.answer, self.name)
            finally:
                self.turn = None

    def give(self, key: str, answer: Any) -> None:
        """The page's answer to the prompt ``key``: :class:`AnswerInvalid` if a terminal would refuse it (the
        run keeps waiting), :class:`LookupError` if the run is not waiting at that prompt."""
        turn = self.turn
        if turn is None or turn.prompt.key != key:
            raise LookupError(f"{key}: the run is not waiting for this answer (reload the page)")
        check_answer(turn.prompt, answer)
        if not turn.answer.done():
            turn.answer.set_result(answer)


@dataclass
class Seating:
    """A resume from the browser: its run, its answers, its task, and how it ended."""

    run_dir: Path
    source: BrowserAnswers
    number: int = 0
    task: asyncio.Task[Resumed] | None = None
    error: str | None = None
    traces: list[Path] = field(default_factory=list)

    @property
    def state(self) -> State:
        if self.task is None or self.task.done():
            return "failed" if self.error is not None or not self.traces else "finished"
        return "asking" if self.source.turn is not None else "working"

    @property
    def live(self) -> bool:
        return self.task is not None and not self.task.done()

    async def _run(self) -> Resumed:
        try:
            done = await resume(self.run_dir, self.source, command=(*COMMAND, str(self.run_dir)))
        except UserError as exc:
            self.error = str(exc)
            return Resumed()
        except Exception as exc:  # the page says what stopped the run; the server goes on
            _LOG.exception("the seated run %s stopped", self.run_dir)
            self.error = redact(f"{type(exc).__name__}: {exc}")
            return Resumed()
        if done.paused:
            self.error = done.paused[0]
        self.traces = done.traces
        return done


class Seats:
    """The seated runs this server is continuing, by folder: at most one resume of a run at a time."""

    def __init__(self) -> None:
        self._by_run: dict[Path, Seating] = {}
        self._started = 0

    def of(self, run_dir: Path) -> Seating | None:
        return self._by_run.get(run_dir)

    def start(self, run_dir: Path, given: dict[str, Any] | None = None) -> Seating:
        """Continue the run from the browser (``given``: answers the page gave already, by prompt key); the
        live resume if one is going."""
        seating = self._by_run.get(run_dir)
        if seating is not None and seating.live:
            return seating
        self._started += 1
        try:
            args, _ = read_session(session_path(run_dir))
            saved = SeatedSettings.of(args, str(session_path(run_dir))).answers
            file = load_answers(saved) if saved is not None and saved.is_file() else None
        except UserError as exc:
            seating = Seating(run_dir, BrowserAnswers(), self._started, error=str(exc))
        else:
            seating = Seating(run_dir, BrowserAnswers(file, given), self._started)
            seating.task = asyncio.get_running_loop().create_task(seating._run())
        self._by_run[run_dir] = seating
        return seating

    async def close(self, *_: object) -> None:
        """Stop every resume still going (the server stops): each run keeps its checkpoint and resumes later."""
        for seating in self._by_run.values():
            if seating.task is not None and not seating.task.done():
                seating.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await seating.task
