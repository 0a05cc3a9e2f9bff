"""The tumor board and the Specialist Turn as the rest of consilium sees them (consilium/graphs/base.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from consilium.agents.prompting import SHARED
from consilium.cases import Case
from consilium.graphs.base import Analyses, OnTrace, Protocol, RunModels
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.graphs.board.validate import FAILURES, FormatReport
from consilium.graphs.bounds import Prompt, StageBounds, assignment_calls, prompt
from consilium.graphs.view import Block, Heading, Note, Table, Text
from consilium.models.backends.replay import ReplayModel
from consilium.models.wrappers import WrapperModel

if TYPE_CHECKING:
    from consilium.graphs.board.run import Mode
    from consilium.graphs.studio import StudioSpec

__all__ = ["BOARD", "TURN"]


class BoardProtocol(Protocol[BoardTrace, BoardConfig]):
    """opentumorboard.txt §2.4, App. B.2: a moderated meeting (agents mode) or the whole meeting in one call
    (single mode), ending in a board conclusion."""

    name: ClassVar[str] = "board"
    trace_model = BoardTrace
    config_model = BoardConfig
    stages = ("role_assignment", "board_turn", "conclusion")
    variants = ("agents", "single")
    variant_kind = "modes"
    analyses = Analyses(completed_columns={
        "trace": None, "stop_reason": None, "turns": float, "input_tokens": int, "output_tokens": int,
        "format_exact": float, "format_dense": float}, optional_columns=frozenset({"format_exact", "format_dense"}),
        supports=frozenset({"networks"}))
    compared_fields = ("status", "roles", "turns", "transcript", "conclusion", "stop_reason", "validation")
    prompt_packages = ("consilium.graphs.board",)
    row_columns = ("turns", "roles", "format_exact", "format_dense", "format_score", "repetition_penalty",
                   "overlength_penalty", "format_failure_reason")
    uses_slides = True
    judged: ClassVar[dict[str, tuple[str, ...]]] = {"agents": ("conclusion",), "single": ("conclusion",)}

    def variant(self, trace: BoardTrace) -> str:
        return trace.mode

    def bounds(self, variant: str, config: BoardConfig) -> list[StageBounds]:
        """agents: roles, then moderator and specialist turns, then the conclusion; single: the whole meeting in
        one call (opentumorboard.txt App. B; graphs/board/graph.py, agents.py). The moderator (its own prompt
        and model) opens every turn with a call, a pass being a call without a turn of its own, and closes the
        meeting: at most ``max_turns`` calls, the specialists at most ``max_turns - 1``. Fewest, from 5 turns on:
        ask, answer, ask, answer, close (two specialists must speak before the moderator may close); under that
        the limit may end the meeting after one question and its answer."""
        c, own = config, self.prompt_packages[0]

        def board(task: str) -> Prompt:
            return prompt(task, own, "board_preamble", own)

        if variant == "single":
            return [StageBounds("board_turn", (1, 1), board("board_single"), 0, c.tokens_for("board_single"))]
        transcript = c.max_turns * c.tokens_for("board_turn")
        asks, answers = (3, 2) if c.max_turns >= 5 else (1, 1)
        return [
            StageBounds("role_assignment", assignment_calls(c), prompt("assign_roles", SHARED, "board_preamble", own),
                        0, c.tokens_for("role_assignment"), chair=True),
            StageBounds("board_turn", (asks, c.max_turns), board("board_moderator"), transcript,
                        c.tokens_for("board_turn"), chair=True),
            StageBounds("board_turn", (answers, c.max_turns - 1), board("board_specialist"), transcript,
                        c.tokens_for("board_turn"), checked=False),  # a specialist speaks in plain text
            StageBounds("conclusion", (1, 1), board("board_conclusion"), transcript, c.tokens_for("conclusion"),
                        chair=True),
        ]

    def arm_variant(self, variant: str) -> str:
        return f"board-{variant}"

    async def run_arm(self, case: Case, variants: Sequence[str], models: RunModels, config: BoardConfig, *,
                      run_id: str, images: tuple[str, ...] = (), reuse: Sequence[BoardTrace] = (),
                      on_trace: OnTrace | None = None) -> list[BoardTrace]:
        from consilium.graphs.board.run import run_board  # LangGraph on use only

        traces = []
        for mode in variants:
            trace = await run_board(case, cast("Mode", mode), models, config, run_id=run_id, images=images)
            if on_trace is not None:
                on_trace(trace)
            traces.append(trace)
        return traces

    def studio(self) -> StudioSpec:
        from consilium.graphs.board.studio import SPEC  # LangGraph on use only

        return SPEC

    async def replay(self, trace: BoardTrace, replay: ReplayModel) -> BoardTrace:
        from consilium.graphs.board.run import run_board  # LangGraph on use only

        chair = _AsSeenBy(replay, trace.moderator_images_sent)
        return await run_board(Case.model_validate(trace.case), trace.mode, RunModels(panel=replay, moderator=chair),
                               BoardConfig.model_validate(trace.config.run_settings()), run_id=trace.run_id,
                               images=tuple(trace.config.images))

    def compared(self, recorded: BoardTrace, replayed: BoardTrace) -> tuple[str, ...]:
        """A trace recorded under older format rules replays on what both rule versions share: the transcript
        the checks read (its validation was scored by the old rules)."""
        if _rules(recorded) == _rules(replayed):
            return self.compared_fields
        return tuple(name for name in self.compared_fields if name != "validation")

    def replay_note(self, recorded: BoardTrace, replayed: BoardTrace) -> str:
        old, new = _rules(recorded), _rules(replayed)
        return "" if old == new else f"validation not compared: recorded under format rules {old}, replayed under {new}"

    def row(self, trace: BoardTrace) -> dict[str, Any]:
        validation = trace.validation
        return {
            "stop_reason": trace.stop_reason or "", "turns": len(trace.turns),
            "roles": len({t.role for t in trace.turns}),
            "format_exact": validation.exact if validation else "",
            "format_dense": validation.dense if validation else "",
            "format_score": validation.score if validation else "",
            "repetition_penalty": validation.repetition_penalty if validation else "",
            "overlength_penalty": validation.overlength_penalty if validation else "",
            "format_failure_reason": validation.failure_reason if validation else "",
        }

    def components(self, trace: BoardTrace) -> dict[str, str]:
        """A board's *conclusion* is its board conclusion."""
        return {"conclusion": trace.conclusion} if trace.conclusion else {}

    def view(self, trace: BoardTrace) -> list[Block]:
        blocks: list[Block] = [Note(f"Mode: {trace.mode}; stop: {trace.stop_reason or '-'}"), Heading("Transcript"),
                               Text(trace.transcript)]
        if trace.validation is not None:
            blocks.append(Table(("check", "passed", "detail"),
                                tuple((c.name, "yes" if c.passed else "no", c.detail)
                                      for c in trace.validation.checks)))
            blocks.append(Note(_score_line(trace.validation)))
        blocks += [Note(note, emphasis=True) for note in trace.notes]
        return blocks


class TurnProtocol(Protocol[TurnTrace, BoardConfig]):
    """opentumorboard.txt App. B.1: one specialist answers one question, judged against the expert's answer."""

    name: ClassVar[str] = "turn"
    trace_model = TurnTrace
    config_model = BoardConfig
    stages = ("specialist_turn",)
    variants = ()
    compared_fields = ("status", "answer", "answer_schema_failure")
    prompt_packages = ("consilium.graphs.board",)

    def variant(self, trace: TurnTrace) -> str:
        return "turn"

    async def replay(self, trace: TurnTrace, replay: ReplayModel) -> TurnTrace:
        from consilium.graphs.board.run import run_turn  # LangGraph on use only

        return await run_turn(Case.model_validate(trace.case), trace.role, trace.question, replay,
                              BoardConfig.model_validate(trace.config.run_settings()), run_id=trace.run_id,
                              images=tuple(trace.config.images))

    def row(self, trace: TurnTrace) -> dict[str, Any]:
        return {"stop_reason": ""}

    def components(self, trace: TurnTrace) -> dict[str, str]:
        """A Specialist Turn's *answer* is its answer."""
        return {"answer": trace.answer} if trace.answer else {}

    def question(self, trace: TurnTrace) -> tuple[str, str, str] | None:
        return trace.question, trace.role, trace.role_category

    def view(self, trace: TurnTrace) -> list[Block]:
        blocks: list[Block] = [Heading("Question"), Text(trace.question), Heading(f"Answer ({trace.role})"),
                               Text(trace.answer or "")]
        if trace.answer_schema_failure:  # kept though it broke consilium's answer schema (schema_failure: record)
            blocks += [Heading("Format finding"), Text(trace.answer_schema_failure)]
        return blocks


def _rules(trace: BoardTrace) -> str | None:
    return trace.validation.rules if trace.validation is not None else None


def _score_line(report: FormatReport) -> str:
    """The format score beside the diagnostics: a failed check need not lower the official score."""
    failure = f"; fails closed: {FAILURES.get(report.failure_reason, report.failure_reason)}" \
        if report.failure_reason else ""
    return (f"Format score {report.score:.4f} (rules {report.rules}: dense {report.dense:.4f}, exact {report.exact}, "
            f"repetition -{report.repetition_penalty:.4f}, overlength -{report.overlength_penalty:.4f}{failure})")


class _AsSeenBy(WrapperModel):
    """The replay model as the board's moderator saw it: the same recorded calls, served and counted by
    the one replay model, with the moderator model's own image support
    (not the panel's), so it gets the slides only if it can read them."""

    def __init__(self, inner: ReplayModel, supports_images: bool | None) -> None:
        super().__init__(inner)
        if supports_images is not None:
            self.supports_images = supports_images

    async def aclose(self) -> None:
        return None  # the replay model is shared with the panel; whoever made it closes it


BOARD = BoardProtocol()
TURN = TurnProtocol()
