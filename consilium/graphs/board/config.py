"""Settings of a board or Specialist Turn run; stored in every trace so it replays exactly."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from consilium.graphs.consilium.config import RUN_CONFIG, StageTokens, known_stages, roles_in_order
from consilium.models import GenerationSettings

__all__ = ["BOARD_MAX_TOKENS", "BoardConfig"]

BOARD_MAX_TOKENS: dict[str, int] = {
    "role_assignment": 768,
    "board_turn": 384,  # one moderator or specialist turn (agents mode)
    "board_single": 3072,  # the whole meeting in one call (single mode)
    "conclusion": 512,
    "specialist_turn": 384,
}


class BoardConfig(BaseModel):
    model_config = RUN_CONFIG

    max_turns: int = Field(default=12, ge=2, description="turns (moderator and specialists) before the limit "
                                                         "closes the meeting")
    discussion: Literal["open", "alternating"] = Field(
        default="open", description="open: the moderator may pass the floor for a specialist to reply directly to "
                                    "another, and the turn limit ends with the moderator's closing turn; "
                                    "alternating: moderator and specialist strictly alternate (the protocol of "
                                    "board traces before schema 1.3, kept so they replay)")
    min_roles: int = Field(default=2, ge=1)
    max_roles: int = Field(default=6, ge=1, validate_default=True)  # checked against min_roles
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: StageTokens = Field(default_factory=lambda: dict(BOARD_MAX_TOKENS),
                                    description="output tokens per call, by stage (" + ", ".join(BOARD_MAX_TOKENS)
                                                + "); a stage left out keeps its default")
    max_repairs: int = Field(default=2, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    wall_limit_s: float | None = Field(default=None, gt=0, description="stop a run after this many seconds and "
                                                                        "record it as failed")

    @field_validator("max_tokens")
    @classmethod
    def _stages(cls, value: dict[str, int]) -> dict[str, int]:
        return known_stages(value, BOARD_MAX_TOKENS)

    @field_validator("max_roles")
    @classmethod
    def _roles(cls, value: int, info: ValidationInfo) -> int:
        return roles_in_order(value, info)

    def settings(self, key: str) -> GenerationSettings:
        return GenerationSettings(temperature=self.temperature, seed=self.seed, timeout_s=self.timeout_s,
                                  max_tokens=self.max_tokens.get(key, BOARD_MAX_TOKENS.get(key, 512)))
