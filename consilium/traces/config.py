"""The run settings every protocol shares, and the config a trace records: a run's settings plus the hashes of
the prompt files it used, typed by the protocol's own record model (docs/traces.md, "config")."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from consilium.agents.schemas import RoleLabels
from consilium.errors import UserError
from consilium.models import GenerationSettings
from consilium.traces.retired import RETIRED_SETTINGS, retired_setting

__all__ = ["RUN_CONFIG", "ConfigRecord", "RunConfig", "StageTokens", "known_stages"]

# Run settings come from users' files: a number must be a number (YAML's `true` is not 1, "3" is not 3),
# finite (no .nan / .inf), and an unknown key is an error rather than silently ignored.
RUN_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

StageTokens = dict[str, Annotated[int, Field(ge=1)]]
"""Output tokens per call, by stage; each at least 1."""


def known_stages(limits: dict[str, int], stages: dict[str, int]) -> dict[str, int]:
    """``limits`` if every key is one of ``stages``: a misspelt stage must not be silently ignored."""
    unknown = [name for name in limits if name not in stages]
    if unknown:
        raise PydanticCustomError("unknown_stage", "unknown stage {unknown} (the stages are {known})",
                                  {"unknown": ", ".join(repr(n) for n in unknown), "known": ", ".join(stages)})
    return limits


class RunConfig(BaseModel):
    """The settings every protocol's run has; a protocol's config adds its own and sets ``STAGE_TOKENS``,
    its stages' default max_tokens."""

    model_config = RUN_CONFIG
    STAGE_TOKENS: ClassVar[dict[str, int]] = {}
    #: A trace's record reads the retired modes older runs used (consilium/traces/retired.py); a run refuses them.
    READS_RETIRED: ClassVar[bool] = False

    min_roles: int = Field(default=3, ge=1)
    max_roles: int = Field(default=6, ge=1, validate_default=True)  # checked against min_roles
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_repairs: int = Field(default=2, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    wall_limit_s: float | None = Field(default=None, gt=0, description="stop a run after this many seconds and "
                                                                        "record it as failed")
    # Not given, the CLI sets it by the moderator's model (consilium/agents/labels.py), so a new trace records
    # the value it ran with; a config recorded before the setting has no key and reads as free, as it ran.
    role_labels: RoleLabels = Field(
        default="free", description="how the moderator names the panel: catalogue (each label one of the role "
                                    "catalogue's names, by the schema) or free (free text, as in the paper); not "
                                    "given, the CLI picks by the moderator's model (embedded: catalogue, else free)")

    @field_validator(*RETIRED_SETTINGS, mode="before", check_fields=False)
    @classmethod
    def _not_retired(cls, value: Any, info: ValidationInfo) -> Any:
        """A retired mode's value is refused by name, for a run; a record of an older run reads it."""
        why = None if cls.READS_RETIRED or info.field_name is None else retired_setting(info.field_name, value)
        if why:
            raise PydanticCustomError("retired_mode", why)
        return value

    @field_validator("max_tokens", check_fields=False)
    @classmethod
    def _stages(cls, value: dict[str, int]) -> dict[str, int]:
        """Every key of a protocol's ``max_tokens`` must be one of its stages."""
        return known_stages(value, cls.STAGE_TOKENS)

    @field_validator("max_roles")
    @classmethod
    def _roles(cls, value: int, info: ValidationInfo) -> int:
        """``max_roles`` if it is at least ``min_roles`` (reported at max_roles, so the error names a field)."""
        min_roles = info.data.get("min_roles")
        if isinstance(min_roles, int) and value < min_roles:
            raise PydanticCustomError("roles_order", "min_roles ({min}) exceeds max_roles ({max})",
                                      {"min": min_roles, "max": value})
        return value

    def tokens_for(self, stage: str) -> int:
        tokens: dict[str, int] = getattr(self, "max_tokens", {})
        return tokens.get(stage, self.STAGE_TOKENS.get(stage, 512))

    def settings(self, stage: str) -> GenerationSettings:
        return GenerationSettings(temperature=self.temperature, seed=self.seed, timeout_s=self.timeout_s,
                                  max_tokens=self.tokens_for(stage))


class ConfigRecord(RunConfig):
    """A run's config as its trace records it. Each protocol's record type derives from its run config and from
    this, the config first so that its defaults win (``class ConsiliumRecord(ConsiliumConfig, ConfigRecord)``),
    and may add what the run was given."""

    #: Fields of the record that are not run settings (replay runs with the rest).
    RECORD_ONLY: ClassVar[tuple[str, ...]] = ("prompts",)
    READS_RETIRED: ClassVar[bool] = True

    prompts: dict[str, str] = Field(default_factory=dict, description="sha256 (first 12 hex) of each prompt file "
                                                                      "the run used")

    def __getitem__(self, key: str) -> Any:
        """A recorded setting by name, as the trace file's ``config`` mapping reads (``trace.config["seed"]``)."""
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in type(self).model_fields

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in type(self).model_fields else default

    def keys(self) -> list[str]:
        return list(type(self).model_fields)

    def run_settings(self) -> dict[str, Any]:
        """The run's settings alone, as its protocol's config model takes them, to run them again (replay,
        ablation); a retired mode cannot run again, a one-line :class:`UserError` naming it."""
        settings = self.model_dump(exclude=set(self.RECORD_ONLY))
        for key in RETIRED_SETTINGS:
            why = retired_setting(key, settings.get(key))
            if why:
                raise UserError(f"config.{key}: {why}")
        return settings
