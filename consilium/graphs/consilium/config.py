"""Settings of a consilium run; stored in every trace so a run can be replayed exactly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from consilium.models import GenerationSettings

__all__ = ["DEFAULT_MAX_TOKENS", "RUN_CONFIG", "ConsiliumConfig", "StageTokens", "known_stages", "roles_in_order"]

DEFAULT_MAX_TOKENS: dict[str, int] = {
    # Room for every schema field at its length bound (agents/schemas.py), so a
    # structured answer is never cut off by max_tokens before its strings are.
    "role_assignment": 768,
    "opinion": 2048,
    "synthesis": 2048,
    "vote": 384,
    "revision": 2560,
}

# Run settings come from users' files: a number must be a number (YAML's `true` is not 1, "3" is not 3),
# finite (no .nan / .inf), and an unknown key is an error rather than silently ignored.
RUN_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

StageTokens = dict[str, Annotated[int, Field(ge=1)]]
"""Output tokens per call, by stage; each at least 1."""


def known_stages(limits: dict[str, int], stages: Mapping[str, int]) -> dict[str, int]:
    """``limits`` if every key is one of ``stages``: a misspelt stage must not be silently ignored."""
    unknown = [name for name in limits if name not in stages]
    if unknown:
        raise PydanticCustomError("unknown_stage", "unknown stage {unknown} (the stages are {known})",
                                  {"unknown": ", ".join(repr(n) for n in unknown), "known": ", ".join(stages)})
    return limits


def roles_in_order(max_roles: int, info: ValidationInfo) -> int:
    """``max_roles`` if it is at least ``min_roles`` (reported at max_roles, so the error names a field)."""
    min_roles = info.data.get("min_roles")
    if isinstance(min_roles, int) and max_roles < min_roles:
        raise PydanticCustomError("roles_order", "min_roles ({min}) exceeds max_roles ({max})",
                                  {"min": min_roles, "max": max_roles})
    return max_roles


class ConsiliumConfig(BaseModel):
    model_config = RUN_CONFIG

    max_rounds: int = Field(default=5, ge=1, description="review rounds before stopping with round_limit "
                                                         "(ai-consilium.txt, Fig. 4: 5)")
    min_roles: int = Field(default=3, ge=1)
    max_roles: int = Field(default=6, ge=1, validate_default=True)  # checked against min_roles
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: StageTokens = Field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS),
                                    description="output tokens per call, by stage (" + ", ".join(DEFAULT_MAX_TOKENS)
                                                + "); a stage left out keeps its default")
    max_repairs: int = Field(default=2, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    wall_limit_s: float | None = Field(default=None, gt=0, description="stop a format's run after this many "
                                                                        "seconds and record it as failed")
    budget_tokens: int | None = Field(default=None, ge=1, description="stop before a call once this many "
                                                                       "tokens (input + output) are spent")

    @field_validator("max_tokens")
    @classmethod
    def _stages(cls, value: dict[str, int]) -> dict[str, int]:
        return known_stages(value, DEFAULT_MAX_TOKENS)

    @field_validator("max_roles")
    @classmethod
    def _roles(cls, value: int, info: ValidationInfo) -> int:
        return roles_in_order(value, info)

    def settings(self, stage: str) -> GenerationSettings:
        return GenerationSettings(temperature=self.temperature, seed=self.seed, timeout_s=self.timeout_s,
                                  max_tokens=self.max_tokens.get(stage, DEFAULT_MAX_TOKENS.get(stage, 512)))
