"""A seated run's folder (docs/human.md, "Pausing and resuming"): the session it saved (``human/session.json``:
its settings and case), where it waits, and its resume under the folder's lock, traces written as ``simulate``
writes them. The studio resumes a paused run from the browser through :func:`resume`; ``simulate --resume``
reads the same session (cli/simulate_human.py, which also checks every setting as its flag would).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from consilium.agents.records import Format
from consilium.cases import Case
from consilium.cohort.lock import RunLock
from consilium.cohort.resume import url_given_again
from consilium.cohort.seated import SeatedRun, SeatedSettings
from consilium.datafiles import first_error, read_data_file
from consilium.errors import UserError
from consilium.graphs.consilium.answers import AnswerSource
from consilium.graphs.consilium.seat import HumanPrompt
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import AnyProtocol
from consilium.runfolder.layout import trace_glob
from consilium.traces.config import RunConfig
from consilium.traces.io import trace_path, write_manifest, write_trace

__all__ = ["HOLDER", "SESSION", "Resumed", "SavedSession", "finished", "read_session", "resume", "seated_runs",
           "session_path", "waiting", "write_traces"]

#: The run's settings and case, in its ``human/`` folder.
SESSION = "session.json"
#: What else holds a seated run's lock, as a refused resume names it.
HOLDER = "this run or a resume of it, still going"


class SavedSession(BaseModel):
    """``human/session.json`` as ``simulate --human`` writes it: the parsed command line (paths absolute, a
    server URL's credentials masked), which of its values are paths, the case, and the case's hash."""

    model_config = ConfigDict(extra="forbid")

    args: dict[str, Any]
    paths: list[str]
    case: dict[str, Any]
    case_hash: str


def session_path(run_dir: Path) -> Path:
    return run_dir / "human" / SESSION


def read_session(path: Path) -> tuple[dict[str, Any], Case]:
    """The saved settings, as saved, and the case: one line naming the file and field if the file was edited
    into something the run could not have saved, or its case into another question than the run's."""
    try:
        session = SavedSession.model_validate(read_data_file(path, "run's settings"))
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc)}") from None
    try:
        case = Case.model_validate(session.case)
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc, prefix='case.')}") from None
    if case.content_hash() != session.case_hash:
        raise UserError(f"{path}: case: does not match its case_hash {session.case_hash} (edited since the run "
                        "started); a resumed run continues with the case it started with")
    return session.args, case


def finished(run_dir: Path, formats: Sequence[str]) -> bool:
    """Whether every format's trace is written (the run is whole; ``replay`` reproduces it)."""
    return all(any(run_dir.glob(trace_glob(fmt))) for fmt in formats)


def seated_runs(root: Path, *, depth: int = 2) -> list[Path]:
    """The seated runs' folders at or under ``root`` (``depth`` levels down), by path: each holds a session."""
    found: list[Path] = []
    for level in range(depth + 1):
        pattern = "/".join(["*"] * level + ["human", SESSION])
        found += [p.parent.parent for p in root.glob(pattern) if p.is_file() and not p.parent.parent.is_symlink()]
    return sorted(set(found))


async def waiting(run_dir: Path, formats: Sequence[Format]) -> dict[Format, list[HumanPrompt]]:
    """Where each format's thread stands in the run's checkpoint: the prompts it is paused at (none: it is
    not started, finished, or was stopped between steps)."""
    from consilium.graphs.consilium.human_run import CHECKPOINTS, waiting_prompts  # LangGraph on use

    if not (run_dir / "human" / CHECKPOINTS).is_file():
        return {fmt: [] for fmt in formats}
    return await waiting_prompts(run_dir / "human", formats)


@dataclass
class Resumed:
    """What a resume came to: the traces it wrote (the run is whole), or why each format stopped short."""

    traces: list[Path] = field(default_factory=list)
    paused: list[str] = field(default_factory=list)


async def resume(run_dir: Path, source: AnswerSource, *, command: Sequence[str]) -> Resumed:
    """Continue a paused or interrupted seated run with its own settings, case and seat, the person's answers
    from ``source``; its folder locked for the time (a terminal's ``--resume`` meanwhile is refused, and this
    is refused while one runs). A server URL whose credentials were masked takes them from
    ``$OPENAI_BASE_URL``. The traces and manifest are written as ``simulate`` writes them, ``command`` in the
    manifest."""
    from consilium.graphs.consilium.human_run import CHECKPOINTS, HumanRun  # LangGraph on use

    path = session_path(run_dir)
    if not path.is_file():
        raise UserError(f"{run_dir}: not a run with a person at the table (no human/{SESSION})")
    with RunLock(run_dir, holder=HOLDER):
        args, case = read_session(path)
        settings = SeatedSettings.of(args, str(path))
        base_url = url_given_again(settings.base_url, None, os.environ.get("OPENAI_BASE_URL"), "the run's")
        settings = settings.model_copy(update={"base_url": base_url})
        if not (run_dir / "human" / CHECKPOINTS).is_file():
            raise UserError(f"{run_dir / 'human' / CHECKPOINTS}: missing: without the run's checkpoint, resuming "
                            "would make its model calls again; start the run again")
        if finished(run_dir, settings.formats):
            raise UserError(f"{run_dir}: the run is already finished (every format's trace is there)")
        seated = SeatedRun.prepare(settings)
        human = HumanRun(settings.human, source, run_dir / "human")
        traces = await seated.run(case, run_dir, human)
        if human.paused:
            return Resumed(paused=list(human.paused))
        return Resumed(traces=write_traces(run_dir, seated.protocol, case, traces, seated.config, command))


def write_traces(run_dir: Path, protocol: AnyProtocol, case: Case, traces: Sequence[Trace], config: RunConfig,
                 command: Sequence[str]) -> list[Path]:
    """Each format's trace and the run's manifest, where and as ``simulate`` writes them."""
    paths = [write_trace(trace_path(run_dir.parent, run_dir.name, case.id,
                                    protocol.arm_variant(protocol.variant(t))), t) for t in traces]
    write_manifest(run_dir, run_id=run_dir.name, command=list(command),
                   config=traces[0].config.model_dump(mode="json"), traces=paths, seed=config.seed)
    return paths
