"""Settings of a board or Specialist Turn run; stored in every trace so it replays exactly."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from consilium.graphs.board.presets import PresetName, preset_values
from consilium.traces.config import ConfigRecord, RunConfig, StageTokens

__all__ = ["BOARD_MAX_TOKENS", "PROMPT_FILE_STAGES", "BoardConfig", "BoardRecord", "TurnRecord"]

BOARD_MAX_TOKENS: dict[str, int] = {
    "role_assignment": 768,
    "board_turn": 384,  # one moderator or specialist turn (agents mode)
    "board_single": 3072,  # the whole meeting in one call (single mode)
    "conclusion": 512,
    "specialist_turn": 384,
}

#: The stages a user's own prompt (``--prompt-file``) may replace: the two the OpenTumorBoard authors' generation
#: scripts prompt (the whole meeting in one call, the Specialist Turn).
PROMPT_FILE_STAGES = ("board_single", "specialist_turn")


class BoardConfig(RunConfig):
    STAGE_TOKENS: ClassVar[dict[str, int]] = BOARD_MAX_TOKENS

    max_turns: int = Field(default=12, ge=2, description="turns (moderator and specialists) before the limit "
                                                         "closes the meeting")
    discussion: Literal["open"] = Field(
        default="open", description="open: the moderator may pass the floor for a specialist to reply directly to "
                                    "another, and the turn limit ends with the moderator's closing turn (board "
                                    "traces before schema 1.3 read as alternating, which no longer runs)")
    floor_schema: Literal["union"] = Field(
        default="union", description="the open floor's moderator answer schema: union (built per call, one branch "
                                     "per action and speaker, so a schema-enforcing backend cannot break the "
                                     "floor's rules; board traces before schema 1.6 read as flat, which no longer "
                                     "runs)")
    min_roles: int = Field(default=2, ge=1)
    cut_off: Literal["retry", "score"] = Field(
        default="retry", description="an answer cut off at max_tokens: retry asks again with twice the room, then "
                                     "fails the stage; score keeps it, as the official evaluation does, and the "
                                     "format score fails it (-1) (traces before this setting read as retry)")
    schema_failure: Literal["fail", "record"] = Field(
        default="fail", description="a Specialist Turn answer that still breaks consilium's answer schema after "
                                    "max_repairs (more than three sentences, no JSON object, ...): fail fails the "
                                    "turn; record keeps the response, as the official evaluation does, when the "
                                    "official extraction finds an answer in it: the turn completes and records the "
                                    "schema failure as a format finding (answer_schema_failure), and a response "
                                    "with no such answer still fails (traces before schema 1.9 read as fail)")
    preset: PresetName | None = Field(
        default=None, description="the generation preset the settings came from (graphs/board/presets.py); "
                                  "settings given beside it override its values")
    prompt_files: dict[str, str] = Field(
        default_factory=dict, description="stage (board_single, specialist_turn) → the text of the user's own "
                                          "system prompt there (--prompt-file), sent byte for byte with the case in "
                                          "the OpenTumorBoard authors' user message instead of consilium's prompts; "
                                          "recorded whole so a replay sends it again (traces before schema 1.8: "
                                          "none)")
    max_tokens: StageTokens = Field(default_factory=lambda: dict(BOARD_MAX_TOKENS),
                                    description="output tokens per call, by stage (" + ", ".join(BOARD_MAX_TOKENS)
                                                + "); a stage left out keeps its default")

    @field_validator("prompt_files")
    @classmethod
    def _prompt_stages(cls, value: dict[str, str]) -> dict[str, str]:
        """Only a stage the authors prompt, each with a non-empty prompt."""
        for stage, text in value.items():
            if stage not in PROMPT_FILE_STAGES:
                raise PydanticCustomError("prompt_stage", "unknown stage {stage} (the stages are {known})",
                                          {"stage": repr(stage), "known": ", ".join(PROMPT_FILE_STAGES)})
            if not text.strip():
                raise PydanticCustomError("prompt_empty", "the prompt of stage {stage} is empty", {"stage": stage})
        return value

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        """A named preset's values under every setting not given beside it (graphs/board/presets.py)."""
        return preset_values(data, cls.STAGE_TOKENS) if isinstance(data, dict) else data


class TurnRecord(BoardConfig, ConfigRecord):
    """A Specialist Turn trace's ``config``: the run's settings, its prompts' hashes and the slide images it had."""

    RECORD_ONLY: ClassVar[tuple[str, ...]] = ("prompts", "images")

    # Wider than the run's: a record reads the retired values older runs used (consilium/traces/retired.py).
    discussion: Literal["open", "alternating"] = Field(  # type: ignore[assignment]
        default="open", description="open: the moderator may pass the floor; alternating: moderator and "
                                    "specialist strictly alternated (board traces before schema 1.3)")
    floor_schema: Literal["union", "flat"] = Field(  # type: ignore[assignment]
        default="union", description="the open floor's moderator answer schema: union, or flat (one object, the "
                                     "rules checked after decoding: open-floor board traces before schema 1.6)")
    images: list[str] = Field(default_factory=list, description="the slide image files the run was given")


class BoardRecord(TurnRecord):
    """A board trace's ``config``: as a turn's, with the mode and the moderator's model."""

    RECORD_ONLY: ClassVar[tuple[str, ...]] = ("prompts", "images", "mode", "moderator_model")

    mode: Literal["agents", "single"] = "agents"
    moderator_model: str = ""
