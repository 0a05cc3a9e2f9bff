"""The library's tumor-board runs as the command line makes them: a meeting (``board_meeting``: a moderator and
specialist agents, or one call writing the whole meeting) and a Specialist Turn (``specialist_turn``), each on a
case file (its slides read beside it), written under ``out/<run-id>/`` with the run's manifest and log, what
``consilium board`` and ``consilium turn`` do. :func:`consilium.api.runs.run` and ``turn`` return the trace
without writing it."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from consilium.api.options import options_of
from consilium.api.sync import sync_twin
from consilium.errors import UserError
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.presets import PRESETS, PresetName
from consilium.models.factory import ModelOptions

__all__ = ["Meeting", "MeetingOptions", "aboard_meeting", "aspecialist_turn", "board_meeting", "specialist_turn"]


@dataclass(frozen=True)
class MeetingOptions:
    """The run folder's parent (``out``), the panel's model spec, the moderator's (default: the panel's), the board's
    settings (role labels, unless set, as the moderator's model defaults to), a generation ``preset``
    (``otb-paper``, ``otb-paper-reasoning``: its values under every setting ``config`` was not given, and its board mode
    when none is given; graphs/board/presets.py), the models' options (default: from the environment), the command
    recorded in the manifest (default: this process's), and the user's own prompts, ``STAGE=PATH`` items as
    ``--prompt-file`` takes them (``board_single`` for a single-mode board, ``specialist_turn`` for a turn: the
    file's text is the system prompt, the case goes in the authors' user message; recorded whole in the trace's
    ``config.prompt_files``)."""

    out: Path = Path("runs")
    model: str = "embedded"
    moderator: str | None = None
    config: BoardConfig = field(default_factory=BoardConfig)
    model_options: ModelOptions | None = None
    command: tuple[str, ...] = ()
    preset: PresetName | None = None
    prompt_files: tuple[str, ...] = ()

    @property
    def settings(self) -> BoardConfig:
        """``config`` under the preset, the settings given in it overriding the preset's."""
        if self.preset is None:
            return self.config
        return BoardConfig.model_validate({**self.config.model_dump(exclude_unset=True), "preset": self.preset})

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", Path(self.out))


@dataclass(frozen=True)
class Meeting:
    """The trace (a ``BoardTrace`` or a ``TurnTrace``) and the file it was written to."""

    trace: Any
    path: Path

    @property
    def completed(self) -> bool:
        return bool(self.trace.status == "completed")


async def aboard_meeting(case_file: str | Path, mode: Literal["agents", "single"] | None = None,
                         options: MeetingOptions | None = None, **changes: Any) -> Meeting:
    """A tumor-board meeting on the case in ``mode`` (``agents`` or ``single``; default agents, or the preset's):
    an unwritable ``out`` is refused before any model call; a model's failure is recorded in the trace (status
    ``failed``)."""
    from consilium.agents.labels import with_role_labels
    from consilium.cases import load_case
    from consilium.graphs.base import RunModels
    from consilium.graphs.board.run import run_board  # LangGraph on use
    from consilium.graphs.board.slides import slide_images
    from consilium.models.factory import build_model

    chosen = options_of(MeetingOptions, options, changes)
    case = load_case(Path(case_file))
    config = with_role_labels(chosen.settings, chosen.moderator or chosen.model)
    mode = mode or (PRESETS[config.preset].mode if config.preset else "agents")
    if chosen.prompt_files and mode == "agents":
        raise UserError("--prompt-file: a board's prompt file replaces the prompt of the one call that writes the "
                        "whole meeting (stage board_single); run it with --mode single or --preset otb-paper")
    config = _with_prompts(config, chosen.prompt_files, "board_single")
    images = slide_images(case, Path(case_file))
    shared = chosen.model_options or ModelOptions.from_env()
    panel = build_model(chosen.model, shared)
    moderator = build_model(chosen.moderator, shared) if chosen.moderator else panel
    run_id = _run_folder(chosen, case.id)
    try:
        trace = await run_board(case, mode, RunModels(panel=panel, moderator=moderator), config, run_id=run_id,
                                images=images)
    finally:
        for model in dict.fromkeys((panel, moderator)):
            await model.aclose()
    return _written(chosen, run_id, case.id, f"board-{mode}", trace, config.seed)


async def aspecialist_turn(case_file: str | Path, role: str, question: str, options: MeetingOptions | None = None,
                           **changes: Any) -> Meeting:
    """The Specialist Turn (opentumorboard.txt App. B.1): ``role`` answers ``question`` on the case; an unknown
    specialty is refused before any model is loaded."""
    from consilium.cases import load_case
    from consilium.graphs.board.run import resolve_role, run_turn  # LangGraph on use
    from consilium.graphs.board.slides import slide_images
    from consilium.models.factory import build_model

    chosen = options_of(MeetingOptions, options, changes)
    case = load_case(Path(case_file))
    resolve_role(role)
    config = _with_prompts(chosen.settings, chosen.prompt_files, "specialist_turn")
    images = slide_images(case, Path(case_file))
    model = build_model(chosen.model, chosen.model_options or ModelOptions.from_env())
    run_id = _run_folder(chosen, case.id)
    try:
        trace = await run_turn(case, role, question, model, config, run_id=run_id, images=images)
    finally:
        await model.aclose()
    return _written(chosen, run_id, case.id, "turn", trace, trace.config.seed)


def _with_prompts(config: BoardConfig, given: tuple[str, ...], stage: str) -> BoardConfig:
    """``config`` with the user's prompt files for ``stage`` read in (judges/prompt_files.py: a bad item, an
    unknown stage or an unreadable or empty file is one line naming the flag)."""
    if not given:
        return config
    from consilium.judges.prompt_files import read_prompt_files

    return config.model_copy(update={"prompt_files": {**config.prompt_files, **read_prompt_files(given, [stage])}})


def _run_folder(options: MeetingOptions, case_id: str) -> str:
    """A new run id, its folder made and the run's log attached (an unwritable ``out`` fails here)."""
    from consilium.fileio import make_folder
    from consilium.log import attach_run_log
    from consilium.traces.io import new_run_id

    run_id = new_run_id(case_id)
    attach_run_log(make_folder(options.out / run_id))
    return run_id


def _written(options: MeetingOptions, run_id: str, case_id: str, variant: str, trace: Any, seed: int) -> Meeting:
    from consilium.traces.io import trace_path, write_manifest, write_trace

    path = write_trace(trace_path(options.out, run_id, case_id, variant), trace)
    write_manifest(options.out / run_id, run_id=run_id, command=list(options.command or sys.argv),
                   config=trace.config.model_dump(mode="json"), traces=[path], seed=seed)
    return Meeting(trace=trace, path=path)


board_meeting = sync_twin(aboard_meeting)
specialist_turn = sync_twin(aspecialist_turn)
