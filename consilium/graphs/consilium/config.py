"""Settings of a consilium run; stored in every trace so a run can be replayed exactly."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from consilium.models import GenerationSettings

__all__ = ["DEFAULT_MAX_TOKENS", "ConsiliumConfig"]

DEFAULT_MAX_TOKENS: dict[str, int] = {
    # Room for every schema field at its length bound (agents/schemas.py), so a
    # structured answer is never cut off by max_tokens before its strings are.
    "role_assignment": 768,
    "opinion": 2048,
    "synthesis": 2048,
    "vote": 384,
    "revision": 2560,
}


class ConsiliumConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rounds: int = Field(default=5, ge=1, description="review rounds before stopping with round_limit "
                                                         "(ai-consilium.txt, Fig. 4: 5)")
    min_roles: int = Field(default=3, ge=1)
    max_roles: int = Field(default=6, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS))
    max_repairs: int = Field(default=2, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    wall_limit_s: float | None = Field(default=None, gt=0, description="stop a format's run after this many "
                                                                        "seconds and record it as failed")
    budget_tokens: int | None = Field(default=None, ge=1, description="stop before a call once this many "
                                                                       "tokens (input + output) are spent")

    @model_validator(mode="after")
    def _limits(self) -> ConsiliumConfig:
        if self.min_roles > self.max_roles:
            raise ValueError(f"min_roles ({self.min_roles}) exceeds max_roles ({self.max_roles})")
        return self

    def settings(self, stage: str) -> GenerationSettings:
        return GenerationSettings(temperature=self.temperature, seed=self.seed, timeout_s=self.timeout_s,
                                  max_tokens=self.max_tokens.get(stage, DEFAULT_MAX_TOKENS.get(stage, 512)))
