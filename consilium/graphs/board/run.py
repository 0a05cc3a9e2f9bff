"""Run a tumor board (agents or single mode) or a Specialist Turn and build its trace."""

from __future__ import annotations

from typing import Any, Literal

from consilium.cases import Case
from consilium.cases.otb_text import board_input, turn_input
from consilium.errors import UserError
from consilium.graphs.base import RunModels, config_record, run_recorded, start_run
from consilium.graphs.board.agents import PROMPTS, BoardCall
from consilium.graphs.board.calls import TurnContext, single_graph, turn_graph
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.graph import RECURSION_LIMIT, BoardContext, board_graph
from consilium.graphs.board.slides import slide_captions, slide_images
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.graphs.board.transcript import Transcript, parse_transcript
from consilium.graphs.board.validate import validate_transcript
from consilium.graphs.running import Latest
from consilium.log import get_logger
from consilium.models import CallRecord, CallRecorder, ChatModel, for_run
from consilium.models.wrappers import work_item
from consilium.roles.catalogue import load_catalogue

__all__ = ["resolve_role", "response_facts", "run_board", "run_turn", "slide_captions", "slide_images"]

Mode = Literal["agents", "single"]
log = get_logger(__name__)


Slides = tuple[tuple[str, ...], tuple[str, ...]]  # image paths and their captions, pairwise


def _image_policy(model: ChatModel, images: tuple[str, ...], captions: tuple[str, ...]) -> tuple[Slides, list[str]]:
    """What a model gets of the slides: a vision model their images, each beside its caption; a text-only
    one none (the captions are in the case text), with a note naming the model and how many it missed."""
    if images and not model.supports_images:
        return ((), ()), [f"{len(images)} slide image(s) not sent: model {model.model_id} does not accept images; "
                          "the captions were sent"]
    return (images, captions if images else ()), []


def _config(config: BoardConfig, images: tuple[str, ...], **extra: Any) -> dict[str, Any]:
    return {**config_record(config, PROMPTS), "images": list(images), **extra}


async def run_board(case: Case, mode: Mode, models: RunModels, config: BoardConfig, *, run_id: str,
                    images: tuple[str, ...] = ()) -> BoardTrace:
    if mode == "agents" and config.prompt_files.get("board_single"):
        raise UserError("prompt_files: stage board_single is the one call of single mode; an agents-mode board "
                        "has no such call (run it with mode single)")
    with work_item(case.id):  # the meeting's calls are admitted by its progress (models/wrappers/limit.py)
        return await _run_board(case, mode, models, config, run_id=run_id, images=images)


async def _run_board(case: Case, mode: Mode, models: RunModels, config: BoardConfig, *, run_id: str,
                     images: tuple[str, ...]) -> BoardTrace:
    recorder = CallRecorder()
    keep_cut_off = config.cut_off == "score"
    panel = for_run(models.panel, recorder, max_repairs=config.max_repairs, accept_truncated=keep_cut_off)
    chair = for_run(models.moderator, recorder, max_repairs=config.max_repairs, accept_truncated=keep_cut_off)
    captions = slide_captions(case)
    (sent, sent_captions), notes = _image_policy(models.panel, images, captions)
    # The moderator and the conclusion writer get the slides by their own model's image support, not the panel's.
    (chair_sent, chair_captions), chair_notes = _image_policy(models.moderator, images, captions)
    text = case.render()
    state = Latest()

    async def single() -> None:
        own = config.prompt_files.get("board_single")
        call = BoardCall(panel, text, sent, config.settings("board_single"), sent_captions,
                         own=(own, board_input(case)) if own else None)
        await state.follow(single_graph(), call, recursion_limit=RECURSION_LIMIT)

    async def agents() -> None:
        notes.extend(note for note in chair_notes if note not in notes)
        context = BoardContext(
            moderator_call=BoardCall(chair, text, chair_sent, config.settings("board_turn"), chair_captions),
            specialist_call=BoardCall(panel, text, sent, config.settings("board_turn"), sent_captions),
            conclusion_call=BoardCall(chair, text, chair_sent, config.settings("conclusion"), chair_captions),
            assignment_call=BoardCall(chair, text, (), config.settings("role_assignment")),
            config=config)
        await state.follow(board_graph(), context, recursion_limit=RECURSION_LIMIT)

    outcome = await run_recorded(single if mode == "single" else agents, start_run(recorder),
                                 wall_limit_s=config.wall_limit_s, event="board_failed", case=case.id, mode=mode)
    roles, turns = list(state.get("roles") or []), list(state.get("turns", []))
    conclusion: str | None = state.get("conclusion")
    stop: Any = state.get("stop_reason")
    if mode == "single":
        stop, transcript = "single_call", state.get("transcript", "")
        if state.get("valid") is False:
            notes.append(f"the transcript still broke the format after {config.max_repairs} repair(s)")
        parsed = parse_transcript(transcript) if transcript else None
        if parsed is not None:
            turns, conclusion = parsed.turns, parsed.conclusion
    else:
        # A meeting stopped by a failed call keeps what was said; one stopped by the wall clock, nothing.
        kept = not outcome.error or (turns and not outcome.timed_out)
        transcript = Transcript(turns=turns, conclusion=conclusion or "").render() if kept else ""
    validation = validate_transcript(transcript, **response_facts(mode, recorder.calls)) if transcript else None
    return BoardTrace(
        **outcome.trace_fields(case, run_id=run_id, model=models.panel.model_id,
                               config=_config(config, images, mode=mode, moderator_model=models.moderator.model_id)),
        mode=mode, roles=roles, turns=turns, transcript=transcript, conclusion=conclusion, stop_reason=stop,
        validation=validation, images_sent=bool(sent),
        moderator_images_sent=bool(chair_sent) if mode == "agents" and images else None, notes=notes,
    )


def response_facts(mode: Mode, calls: list[CallRecord]) -> dict[str, Any]:
    """What the official format score reads of the response besides its text (docs/board.md): whether it was
    cut off (the final meeting call's finish reason), its length and the generation's length limit. In single
    mode the response is the last meeting call's answer (earlier repair attempts are not part of it) under that
    call's max_tokens; in agents mode the transcript is assembled, its length the output tokens of every turn
    and conclusion call whose answer was used, with no one call's limit (the overlength ramp ends at 8,192)."""
    meeting = [c for c in calls if c.stage in ("board_turn", "conclusion")]
    if not meeting:
        return {}
    final = meeting[-1]
    if mode == "single":
        length, limit = final.usage.output_tokens, final.settings.max_tokens
    else:
        length, limit = sum(c.usage.output_tokens for c in meeting if c.error is None), None
    return {"truncated": final.finish_reason == "length", "response_tokens": length, "length_limit": limit}


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
    answerer = for_run(model, recorder, max_repairs=config.max_repairs, accept_truncated=config.cut_off == "score")
    (sent, captions), notes = _image_policy(model, images, slide_captions(case))
    own = config.prompt_files.get("specialist_turn")
    context = TurnContext(BoardCall(answerer, case.render(), sent, config.settings("specialist_turn"), captions,
                                    own=(own, turn_input(case, role, question)) if own else None), role, question,
                          keep_malformed=config.schema_failure == "record")
    state = Latest()
    outcome = await run_recorded(lambda: state.follow(turn_graph(), context, recursion_limit=RECURSION_LIMIT),
                                 start_run(recorder), wall_limit_s=config.wall_limit_s, event="turn_failed",
                                 case=case.id, role=role)
    broken = state.get("schema_failure")
    if broken:
        notes.append(_finding(broken, recorder.calls))
    return TurnTrace(
        **outcome.trace_fields(case, run_id=run_id, model=model.model_id, config=_config(config, images)),
        role=role, role_category=category, question=question, answer=state.get("answer"), images_sent=bool(sent),
        answer_schema_failure=broken, notes=notes,
    )


def _finding(broken: str, calls: list[CallRecord]) -> str:
    """The note of a kept answer that broke consilium's answer schema (said in the log too): a format finding."""
    cut = bool(calls) and calls[-1].finish_reason == "length"
    log.warning("turn_answer_schema_failure", error=broken, cut_off=cut)
    return (f"the answer breaks consilium's answer schema{' (cut off at max_tokens)' if cut else ''}, kept as the "
            f"official evaluation keeps it (schema_failure: record): {broken}")
