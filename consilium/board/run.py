"""Run a tumor board (agents or single mode) or a Specialist Turn and build its trace."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from consilium.agents import board
from consilium.agents.board import BoardCall
from consilium.agents.records import AssignedRole
from consilium.board.transcript import Transcript, Turn, parse_transcript
from consilium.board.validate import validate_transcript
from consilium.cases import Case
from consilium.errors import BudgetExceededError, ModelError, UserError
from consilium.graphs.board import BoardConfig, BoardContext, board_graph
from consilium.graphs.board.graph import RECURSION_LIMIT
from consilium.graphs.running import stream_states
from consilium.log import get_logger
from consilium.models import CallRecorder, ChatModel, for_run
from consilium.models.wrappers import work_item
from consilium.roles.catalogue import load_catalogue
from consilium.simulate import RunModels, config_record
from consilium.traces.build import base_fields
from consilium.traces.schema import BoardTrace, TurnTrace

__all__ = ["resolve_role", "run_board", "run_turn", "slide_captions", "slide_images"]

log = get_logger(__name__)
Mode = Literal["agents", "single"]


def slide_images(case: Case, case_file: Path) -> tuple[str, ...]:
    """Paths of the case's slide images, resolved against the case file's folder, which they
    must not leave; a missing file is the user's to fix."""
    folder = case_file.resolve().parent
    images = []
    for n, slide in enumerate(case.slides):
        if not slide.image:
            continue
        path = (folder / slide.image).resolve()
        if not path.is_relative_to(folder):
            raise UserError(f"{case_file}: slides.{n}.image: {slide.image!r} points outside the case's folder")
        if not path.is_file():
            raise UserError(f"{case_file}: slides.{n}.image: file not found: {path}")
        images.append(str(path))
    return tuple(images)


def slide_captions(case: Case) -> tuple[str, ...]:
    """The caption of each slide that has an image, numbered as the case text numbers it, in the order of
    :func:`slide_images`: a slide is sent as its image followed by its caption (opentumorboard.txt App. B.1,
    B.2, C.1)."""
    return tuple(f"Slide {n}: {slide.caption}" for n, slide in enumerate(case.slides, 1) if slide.image)


Slides = tuple[tuple[str, ...], tuple[str, ...]]  # image paths and their captions, pairwise


def _image_policy(model: ChatModel, images: tuple[str, ...], captions: tuple[str, ...]) -> tuple[Slides, list[str]]:
    """What a model gets of the slides: a vision model their images, each beside its caption; a text-only
    one none (the captions are in the case text), with a note naming the model and how many it missed."""
    if images and not model.supports_images:
        return ((), ()), [f"{len(images)} slide image(s) not sent: model {model.model_id} does not accept images; "
                          "the captions were sent"]
    return (images, captions if images else ()), []


def _config(config: BoardConfig, images: tuple[str, ...], **extra: Any) -> dict[str, Any]:
    return {**config_record(config), "images": list(images), **extra}


async def run_board(case: Case, mode: Mode, models: RunModels, config: BoardConfig, *, run_id: str,
                    images: tuple[str, ...] = ()) -> BoardTrace:
    with work_item(case.id):  # the meeting's calls are admitted by its progress (models/wrappers/limit.py)
        return await _run_board(case, mode, models, config, run_id=run_id, images=images)


async def _run_board(case: Case, mode: Mode, models: RunModels, config: BoardConfig, *, run_id: str,
                     images: tuple[str, ...]) -> BoardTrace:
    recorder = CallRecorder()
    panel = for_run(models.panel, recorder, max_repairs=config.max_repairs)
    chair = for_run(models.moderator, recorder, max_repairs=config.max_repairs)
    captions = slide_captions(case)
    (sent, sent_captions), notes = _image_policy(models.panel, images, captions)
    # The moderator and the conclusion writer get the slides by their own model's ability (issue 15, item 12).
    (chair_sent, chair_captions), chair_notes = _image_policy(models.moderator, images, captions)
    text = case.render()
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    roles: list[AssignedRole] = []
    turns: list[Turn] = []
    conclusion: str | None = None
    transcript = ""
    stop: Any = None
    error: str | None = None
    try:
        async with asyncio.timeout(config.wall_limit_s):
            if mode == "single":
                stop = "single_call"
                transcript, valid = await board.write_single_board(BoardCall(panel, text, sent, config.settings(
                    "board_single"), sent_captions))
                if not valid:
                    notes.append(f"the transcript still broke the format after {config.max_repairs} repair(s)")
                parsed = parse_transcript(transcript)
                if parsed is not None:
                    turns, conclusion = parsed.turns, parsed.conclusion
            else:
                state: dict[str, Any] = {}
                notes += [note for note in chair_notes if note not in notes]
                context = BoardContext(
                    moderator_call=BoardCall(chair, text, chair_sent, config.settings("board_turn"), chair_captions),
                    specialist_call=BoardCall(panel, text, sent, config.settings("board_turn"), sent_captions),
                    conclusion_call=BoardCall(chair, text, chair_sent, config.settings("conclusion"), chair_captions),
                    assignment_call=BoardCall(chair, text, (), config.settings("role_assignment")),
                    config=config)
                try:
                    async for values in stream_states(board_graph(), {}, context, recursion_limit=RECURSION_LIMIT):
                        state = values
                finally:
                    roles, turns = list(state.get("roles") or []), list(state.get("turns", []))
                    stop, conclusion = state.get("stop_reason"), state.get("conclusion")
                transcript = Transcript(turns=turns, conclusion=conclusion or "").render()
    except TimeoutError:
        error = f"WallClockLimit: the run exceeded its wall-clock limit of {config.wall_limit_s:g} s"
        log.error("board_failed", case=case.id, mode=mode, error=error)
    except (ModelError, BudgetExceededError) as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.error("board_failed", case=case.id, mode=mode, error=error)
        if mode == "agents" and turns:
            transcript = Transcript(turns=turns, conclusion=conclusion or "").render()
    # E.2's overlength penalty reads the response's length: in single mode the final transcript is the
    # last meeting call's answer; earlier repair attempts are not part of it (issue 15, item 8).
    attempts = [c for c in recorder.calls if c.stage == "board_turn"]
    output_tokens = attempts[-1].usage.output_tokens if mode == "single" and attempts else None
    validation = validate_transcript(transcript, response_tokens=output_tokens) if transcript else None
    return BoardTrace(
        **base_fields(case, run_id=run_id, model=models.panel.model_id,
                      config=_config(config, images, mode=mode, moderator_model=models.moderator.model_id),
                      recorder=recorder, started_at=started_at, wall_s=time.perf_counter() - started, error=error),
        mode=mode, roles=roles, turns=turns, transcript=transcript, conclusion=conclusion, stop_reason=stop,
        validation=validation, images_sent=bool(sent),
        moderator_images_sent=bool(chair_sent) if mode == "agents" and images else None, notes=notes,
    )


def resolve_role(label: str) -> str:
    """The catalogue category of a ``--role`` label; an unknown specialty is a user error."""
    catalogue = load_catalogue()
    category = catalogue.map_label(label)
    if category.id == "other" and label.strip().lower() != "other":
        raise UserError(f"--role: {label!r} is not a specialty in the role catalogue "
                        "(consilium/roles/catalogue.yaml), e.g. 'Radiation oncologist'")
    return category.id


async def run_turn(case: Case, role: str, question: str, model: ChatModel, config: BoardConfig, *, run_id: str,
                   images: tuple[str, ...] = ()) -> TurnTrace:
    category = resolve_role(role)
    recorder = CallRecorder()
    answerer = for_run(model, recorder, max_repairs=config.max_repairs)
    (sent, captions), notes = _image_policy(model, images, slide_captions(case))
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    answer: str | None = None
    error: str | None = None
    try:
        answer = await board.answer_turn(BoardCall(answerer, case.render(), sent, config.settings("specialist_turn"),
                                                   captions), role, question)
    except (ModelError, BudgetExceededError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    return TurnTrace(
        **base_fields(case, run_id=run_id, model=model.model_id, config=_config(config, images), recorder=recorder,
                      started_at=started_at, wall_s=time.perf_counter() - started, error=error),
        role=role, role_category=category, question=question, answer=answer, images_sent=bool(sent), notes=notes,
    )
