"""A consilium run with a person at the table: the graph with a checkpointer, paused at the person's turns.

Each format is one thread of a LangGraph checkpointer (SQLite in the run's folder, ``human/checkpoints.sqlite``;
in memory for the Python API and replay). The run streams the graph until it stops at an interrupt, asks the
answer source for the person's answer, checks it as a model's answer would be checked, and resumes with
``Command(resume=answer)``. An answer the source does not hold (an answers file without it) pauses the format
there; Ctrl-C stops it. Either way the checkpoint keeps every finished step (and every finished task of the
step in progress) and ``human/<format>.calls.json`` the model calls made so far, so a resumed run continues
where it stopped: the checkpointed steps are not run again and their recorded calls go into the trace as made.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import aiosqlite
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import ValidationError

from consilium.agents import records
from consilium.agents.records import AssignedRole, Format
from consilium.cases import Case
from consilium.datafiles import first_error, read_data_file
from consilium.errors import UserError
from consilium.fileio import make_folder, write_text_atomic
from consilium.graphs.base import RunModels
from consilium.graphs.checkpoint_serde import MaskingSerializer
from consilium.graphs.consilium import seat
from consilium.graphs.consilium.answers import (
    AnswerMissing,
    AnswerRefused,
    AnswerSource,
    CallbackAnswers,
    Given,
    MappingAnswers,
)
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.graph import RECURSION_LIMIT, ConsiliumContext, human_graph
from consilium.graphs.consilium.run import run_case
from consilium.graphs.consilium.seat import AnswerInvalid, HumanPrompt, HumanRecord, check_answer
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.running import Latest
from consilium.models import CallRecord, CallRecorder
from consilium.roles.catalogue import normalise_label

__all__ = ["CHECKPOINTS", "MODERATOR", "HumanRun", "check_config", "run_seated", "run_with_person", "seated",
           "waiting_prompts"]

#: The run's LangGraph checkpoint database, in its ``human/`` folder.
CHECKPOINTS = "checkpoints.sqlite"
#: The moderator's role in every call tag and in ``usage.by_role``: not a seat a person can take.
MODERATOR = "moderator"

#: The record types the graph state holds, which the checkpointer may rebuild (and nothing else).
SERDE = MaskingSerializer(allowed_msgpack_modules=[  # no secret in a checkpoint
    *((records.__name__, cls.__name__) for cls in (AssignedRole, records.Opinion, records.Report, records.Vote,
                                                    records.Round)),
    (seat.__name__, seat.HumanInput.__name__)])


class HumanRun:
    """A person's seat for one invocation (both formats): who they play, where their answers come from, and the
    checkpoints (in ``folder``, else in memory). ``paused`` collects why a format stopped short of its end."""

    def __init__(self, requested: str, source: AnswerSource, folder: Path | None = None) -> None:
        if not requested.strip():
            raise UserError("--human: give the role the person plays (a label or category of the panel)")
        if normalise_label(requested) == MODERATOR:  # its id would merge the seat with the moderator's usage
            raise UserError(f"--human: {requested.strip()!r} is the moderator, who chairs the panel and holds no "
                            "seat on it; a person takes a panel member's seat (a label or category of the panel)")
        self.requested, self.source, self.folder = " ".join(requested.split()), source, folder
        self.paused: list[str] = []
        #: The formats whose thread holds a state (their calls file is written only then: see ``_save``).
        self._started: set[Format] = set()
        self._graph: CompiledStateGraph[Any, ConsiliumContext, Any, Any] | None = (
            human_graph(InMemorySaver(serde=SERDE)) if folder is None else None)

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[HumanRun]:
        """The run's checkpointer open (its SQLite file in ``folder``) for the time of the run."""
        if self.folder is None:
            yield self
            return
        async with aiosqlite.connect(make_folder(self.folder) / CHECKPOINTS) as conn:
            self._graph = human_graph(AsyncSqliteSaver(conn, serde=SERDE))
            try:
                yield self
            finally:
                self._graph = None

    def _calls_file(self, fmt: Format) -> Path | None:
        return self.folder / f"{fmt}.calls.json" if self.folder is not None else None

    def restore(self, fmt: Format, recorder: CallRecorder, shared: list[CallRecord] | None) -> None:
        """Give a format's recorder the calls its run starts with: those it made before it paused or was stopped
        (each answered again as made if a task cut off by Ctrl-C asks it again: never made twice), else the
        shared assignment's."""
        path = self._calls_file(fmt)
        if path is None or not path.exists():
            for call in shared or []:
                recorder.adopt(call)
            return
        for call in _read_calls(path):
            recorder.restore(call)

    async def check_resumable(self, formats: Sequence[Format]) -> None:
        """Refuse, in one line, a checkpoint that cannot continue the run without making a call twice or
        leaving one out: a database that is not LangGraph's SQLite checkpoint, or a format whose checkpointed
        steps and recorded calls (``<format>.calls.json``) do not go together (one without the other)."""
        graph = self._graph
        if self.folder is None or graph is None:
            return
        database = self.folder / CHECKPOINTS
        for fmt in formats:
            try:
                values = (await graph.aget_state(_thread(fmt))).values
            except (sqlite3.Error, ValueError, TypeError, KeyError) as exc:
                raise UserError(f"{database}: not a readable checkpoint of this run ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())}); it cannot be resumed: start the run again") from None
            path = self._calls_file(fmt)
            assert path is not None
            made = _read_calls(path) if path.exists() else None
            if values and made is None:
                raise UserError(f"{path}: missing, while {database} holds the {fmt} format's steps: their model "
                                "calls are gone, so the run cannot be resumed; start it again")
            lost = _unrecorded(values, made or [])
            if lost is not None:
                stage, role, round_ = lost
                at = f" in round {round_}" if round_ is not None else ""
                raise UserError(f"{path}: records no {stage} call of the {role}{at}, while {database} holds its "
                                "result (the calls file was edited or replaced): resuming would leave that call "
                                "out of the trace; start the run again")
            if not values and any(c.stage != "role_assignment" for c in made or []):
                # A thread stopped before its first checkpoint holds only the panel it was given (the shared role
                # assignment, restored from the file and answered as made); any other call would be made again.
                count = len(made or [])
                raise UserError(f"{database}: holds no step of the {fmt} format, while {path.name} records "
                                f"{count} model calls of it: the checkpoint was lost or replaced, and resuming "
                                "would make those calls again; start the run again")

    def _save(self, fmt: Format, recorder: CallRecorder) -> None:
        """The format's calls so far, beside its checkpoint: written as each call is recorded, before its task's
        result can reach the checkpoint (a task the checkpoint keeps is not run again, so its calls must be on
        file even if the process is killed mid-step; a call whose task is run again is answered as made:
        :meth:`CallRecorder.restore`), and only once its thread holds a state, so that calls of a first step cut
        short (made again on resume) are never restored beside their remaking."""
        path = self._calls_file(fmt)
        if path is not None and fmt in self._started:
            write_text_atomic(path, json.dumps([c.model_dump(mode="json") for c in recorder.calls]) + "\n")

    async def follow(self, fmt: Format, state: Latest, context: ConsiliumContext, recorder: CallRecorder, *,
                     on_step: Callable[[dict[str, Any], dict[str, Any]], None]) -> None:
        """Run (or resume) the format's thread to its end or to an answer the source lacks."""
        graph = self._graph
        if graph is None:
            raise RuntimeError("HumanRun.follow outside HumanRun.opened()")
        config = _thread(fmt)
        recorder.on_record = lambda: self._save(fmt, recorder)
        try:
            saved = (await graph.aget_state(config)).values
            todo: Any = state.values
            if saved or todo:  # its thread holds a state from its first checkpoint (a shared panel) on
                self._started.add(fmt)
            if saved:  # a paused or interrupted run: continue its thread from its last checkpoint
                on_step(state.values, dict(saved))
                state.values, todo = dict(saved), None
            while True:
                # durability "sync": each step's checkpoint is on disk before the next step's calls are made
                # (LangGraph's default writes it while the next step runs), so where a run stopped is one
                # place, not a race between the checkpoint and the calls file.
                async for values in graph.astream(todo, config=config, context=context, stream_mode="values",
                                                  durability="sync"):
                    values = {k: v for k, v in values.items() if k != "__interrupt__"}
                    if values:
                        self._started.add(fmt)
                    on_step(state.values, values)
                    state.values = values
                    self._save(fmt, recorder)
                waiting = [i for task in (await graph.aget_state(config)).tasks for i in task.interrupts]
                if not waiting:
                    return
                prompt = HumanPrompt.model_validate(waiting[0].value)
                todo = Command(resume=await self._answer(prompt))
        except AnswerMissing as exc:
            self.paused.append(str(exc))
        finally:
            recorder.on_record = None
            self._save(fmt, recorder)

    async def _answer(self, prompt: HumanPrompt) -> Any:
        got = await self.source.answer(prompt)
        answer, source = (got.answer, got.source) if isinstance(got, Given) else (got, self.source.name)
        try:
            check_answer(prompt, answer)
        except AnswerInvalid as exc:
            where = getattr(self.source, "where", self.source.name)
            raise AnswerRefused(f"{where}: {exc.at(prompt.key)}") from None
        return {"answer": answer, "source": source}

    def record(self, values: dict[str, Any]) -> HumanRecord | None:
        return seat.human_record(self.requested, values)


def _unrecorded(values: Mapping[str, Any], made: Sequence[CallRecord]) -> tuple[str, str, int | None] | None:
    """The tag (stage, role, round) of the first model output a checkpointed state holds whose call ``made``
    does not record, if any: the role assignment, each model's opinion and vote (the person's are answers, not
    calls), the synthesis and each revision."""
    person = values.get("human")
    expected: list[tuple[str, str, int | None]] = []
    if values.get("roles"):
        expected.append(("role_assignment", MODERATOR, None))
    expected += [("opinion", o.role, None) for o in values.get("opinions", []) if o.role != person]
    expected += [("synthesis", MODERATOR, None) if r.round == 0 else ("revision", MODERATOR, r.round)
                 for r in values.get("reports", [])]
    votes = [*values.get("votes", []), *(v for r in values.get("rounds", []) for v in r.votes)]
    expected += [("vote", v.role, v.round) for v in votes if v.role != person]
    recorded = {(c.stage, c.role, c.round) for c in made}
    return next((tag for tag in expected if tag not in recorded), None)


def _thread(fmt: Format) -> Any:
    """The LangGraph config of a format's thread."""
    return {"configurable": {"thread_id": fmt}, "recursion_limit": RECURSION_LIMIT}


def _read_calls(path: Path) -> list[CallRecord]:
    """A format's recorded calls, read by the strict reader (bounded nesting and numbers) and checked: one line
    naming the file and the call's field if it was edited into something else."""
    data = read_data_file(path, "record of the run's model calls")
    if not isinstance(data, list):
        raise UserError(f"{path}: (root): a list of the run's model calls")
    calls: list[CallRecord] = []
    for i, call in enumerate(data):
        try:
            calls.append(CallRecord.model_validate(call))
        except ValidationError as exc:
            raise UserError(f"{path}: {first_error(exc, prefix=f'{i}.')}") from None
    if [c.index for c in calls] != list(range(len(calls))):
        raise UserError(f"{path}: index: the calls are not numbered 0 to {len(calls) - 1} in order (edited?)")
    return calls


async def waiting_prompts(folder: Path, formats: Sequence[Format]) -> dict[Format, list[HumanPrompt]]:
    """The prompts each format's thread is paused at in the checkpoint of ``folder`` (a run's ``human/``)."""
    async with aiosqlite.connect(folder / CHECKPOINTS) as conn:
        graph = human_graph(AsyncSqliteSaver(conn, serde=SERDE))
        states = {fmt: await graph.aget_state(_thread(fmt)) for fmt in formats}
    return {fmt: [HumanPrompt.model_validate(i.value) for task in state.tasks for i in task.interrupts]
            for fmt, state in states.items()}


def check_config(config: ConsiliumConfig) -> None:
    """A run with a person at the table takes no wall-clock limit: the person's time to answer would count
    against it (docs/human.md)."""
    if config.wall_limit_s is not None:
        raise UserError("--wall-limit: a run with a person at the table takes no wall-clock limit (the person's "
                        "time to answer would count against it); leave it out")


async def run_with_person(case: Case, formats: list[Format], models: RunModels, config: ConsiliumConfig, *,
                          run_id: str, human: HumanRun) -> list[Trace]:
    """Every format of one case with the person at the table, checkpointed; the traces are complete unless
    ``human.paused`` says where a format stopped. A wall-clock limit is refused: it would count the person's
    time to answer as the run's."""
    check_config(config)
    async with human.opened():
        await human.check_resumable(formats)
        return await run_case(case, formats, models, config, run_id=run_id, human=human)


def seated(requested: str | None, answers: Mapping[str, Any] | Callable[[HumanPrompt], Any] | None) -> HumanRun:
    """A person's seat for the Python API (of a protocol that declares one: the caller asks it): their answers a
    mapping shaped like an answers file, or a function of each :class:`HumanPrompt` (sync or async);
    checkpointed in memory."""
    if requested is None or answers is None:
        raise UserError("human: give both the role (human=) and the person's answers (answers=)")
    source = CallbackAnswers(answers) if callable(answers) else MappingAnswers(answers, "answers", name="api")
    return HumanRun(requested, source)


async def run_seated(case: Case, formats: Sequence[str], models: RunModels, config: ConsiliumConfig, *,
                     run_id: str, human: HumanRun) -> list[Trace]:
    """:func:`run_with_person` for a run that cannot be resumed (in memory): a missing answer raises."""
    traces = await run_with_person(case, cast(list[Format], list(formats)), models, config, run_id=run_id,
                                   human=human)
    if human.paused:
        raise UserError(human.paused[0])
    return traces
