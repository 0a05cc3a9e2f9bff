"""What every protocol is: one small interface, the shared run settings and the shared run skeleton.

A protocol (the consilium, the tumor board, the Specialist Turn, the single-specialist baseline) is a
package under ``consilium/protocols/`` with its state, graph, config, prompts, runner and record
type, and one :class:`Protocol` object that the rest of consilium asks: replay what to compare, the
cohort what a row holds, the judges which texts a trace offers, the viewer what to show. Nothing
above this layer tests a trace's type (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from consilium.agents.prompting import prompt_hashes
from consilium.cases import Case
from consilium.errors import BudgetExceededError, ModelError, UserError
from consilium.log import get_logger
from consilium.models import CallRecorder, ChatModel, GenerationSettings
from consilium.models.backends.replay import ReplayModel
from consilium.protocols.view import Block
from consilium.traces.build import base_fields
from consilium.traces.schema import TraceBase

__all__ = ["NOT_SETTINGS", "RUN_CONFIG", "OnTrace", "Protocol", "RunConfig", "RunModels", "RunOutcome", "StageTokens",
           "config_record", "known_stages", "run_recorded", "settings_of", "start_run"]

log = get_logger(__name__)

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

    min_roles: int = Field(default=3, ge=1)
    max_roles: int = Field(default=6, ge=1, validate_default=True)  # checked against min_roles
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_repairs: int = Field(default=2, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    wall_limit_s: float | None = Field(default=None, gt=0, description="stop a run after this many seconds and "
                                                                        "record it as failed")

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


@dataclass(frozen=True)
class RunModels:
    """The shared model stacks for the named roles (STYLE.md 4)."""

    panel: ChatModel
    moderator: ChatModel


@dataclass
class RunOutcome:
    """How a run went, for its trace: its recorder, when it started, and its error (None: completed)."""

    recorder: CallRecorder
    started_at: str
    started: float
    error: str | None = None
    timed_out: bool = False

    def trace_fields(self, case: Case, *, run_id: str, model: str, config: dict[str, Any]) -> dict[str, Any]:
        """The fields every trace shares (consilium/traces/build.py)."""
        return base_fields(case, run_id=run_id, model=model, config=config, recorder=self.recorder,
                           started_at=self.started_at, wall_s=time.perf_counter() - self.started, error=self.error)


async def run_recorded(body: Callable[[], Awaitable[None]], outcome: RunOutcome, *, wall_limit_s: float | None,
                       event: str, **where: Any) -> RunOutcome:
    """The run skeleton every protocol shares: ``body`` under the wall-clock limit; a model failure, an
    exhausted token budget or the limit ends it with ``outcome.error`` set (the trace is then ``failed``,
    with whatever state the body reached), never with an exception."""
    try:
        async with asyncio.timeout(wall_limit_s):
            await body()
    except TimeoutError:
        outcome.error = f"WallClockLimit: the run exceeded its wall-clock limit of {wall_limit_s:g} s"
        outcome.timed_out = True
        log.error(event, error=outcome.error, **where)
    except (ModelError, BudgetExceededError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
        log.error(event, error=outcome.error, **where)
    return outcome


def start_run(recorder: CallRecorder) -> RunOutcome:
    return RunOutcome(recorder=recorder, started_at=datetime.now(UTC).isoformat(), started=time.perf_counter())


def config_record(config: BaseModel, *prompt_packages: str) -> dict[str, Any]:
    """A run's config as its trace records it: the settings plus the hashes of the prompts it used."""
    return {**config.model_dump(), "prompts": prompt_hashes(*prompt_packages)}


#: What a trace's config holds besides the run's settings.
NOT_SETTINGS = ("prompts", "images", "mode", "moderator_model")


def settings_of(config: dict[str, Any]) -> dict[str, Any]:
    """A recorded config without what is not a run setting (prompt hashes, images, …): what replay runs with."""
    return {k: v for k, v in config.items() if k not in NOT_SETTINGS}


T = TypeVar("T", bound=TraceBase)
C = TypeVar("C", bound=RunConfig)

#: Told each trace of an arm as soon as it is done.
OnTrace = Callable[[TraceBase], None]


class Protocol(ABC, Generic[T, C]):
    """One protocol, as the rest of consilium sees it.

    ``name`` is its ``--protocol`` value and its traces' ``kind``; ``variants`` are what one case is run
    in (formats or modes; ``variant_flag`` names the flag that picks them); ``compared_fields`` are
    what replay requires to come out identical.
    """

    name: ClassVar[str]
    trace_model: ClassVar[type[TraceBase]]
    config_model: ClassVar[type[RunConfig]]
    variants: ClassVar[tuple[str, ...]] = ()
    variant_flag: ClassVar[str] = "--formats"
    compared_fields: ClassVar[tuple[str, ...]] = ("status",)
    #: Columns a cohort row of this protocol adds to arms.csv's shared ones.
    row_columns: ClassVar[tuple[str, ...]] = ()
    #: Packages whose ``prompts/`` folders hold the protocol's own prompts (besides the shared ones).
    prompt_packages: ClassVar[tuple[str, ...]] = ()

    def prompt_hashes(self) -> dict[str, str]:
        """The hashes of every prompt file the protocol's runs use, as their traces record them."""
        return prompt_hashes(*self.prompt_packages)

    @abstractmethod
    def variant(self, trace: T) -> str:
        """The variant (format or mode) the trace was run in."""

    def arm_variant(self, variant: str) -> str:
        """How a variant is named in a cohort's files and tables (``format`` column, trace file name)."""
        return variant

    async def run_arm(self, case: Case, variants: Sequence[str], models: RunModels, config: C, *, run_id: str,
                      images: tuple[str, ...] = (), reuse: Sequence[T] = (),
                      on_trace: OnTrace | None = None) -> list[T]:
        """One case in each of ``variants`` (a cohort arm); ``reuse`` are finished traces of its other variants
        (a protocol may take what they share, e.g. the panel, from them). ``on_trace`` hears of each as it is
        done. A protocol without variants does not run in cohorts."""
        raise UserError(f"--protocol {self.name}: runs one question at a time, not as a cohort")

    @abstractmethod
    async def replay(self, trace: T, replay: ReplayModel) -> T:
        """The trace re-run from its recorded calls, served by ``replay``."""

    def compared(self, recorded: T, replayed: T) -> tuple[str, ...]:
        """The fields replay compares for this pair (a protocol may leave out one its checks have changed)."""
        return self.compared_fields

    def replay_note(self, recorded: T, replayed: T) -> str:
        """What replay leaves uncompared and why, said beside "identical" ("" for nothing)."""
        return ""

    @abstractmethod
    def row(self, trace: T) -> dict[str, Any]:
        """The protocol's own columns of the trace's cohort row (``row_columns`` and ``stop_reason``)."""

    @abstractmethod
    def components(self, trace: T) -> dict[str, str]:
        """Component name → text a judge scores, for the components this trace has (a failed run may have none)."""

    @abstractmethod
    def view(self, trace: T) -> list[Block]:
        """What the viewer shows of the run, below the case."""

    def leading_diagnosis(self, trace: T) -> str | None:
        """The answer's most likely diagnosis, when the protocol's answer names one apart (pass@k)."""
        return None

    def question(self, trace: T) -> tuple[str, str, str] | None:
        """(question, role, role category) when the run answers one question put to one role, judged against
        the case's reference answer to that question; None otherwise."""
        return None

    def whole_case(self, trace: T) -> bool:
        """Whether the trace has a deliberation record a whole-case criterion can judge."""
        return False

    def images(self, trace: T) -> tuple[str, ...]:
        """The slide images the run was given (replayed with them)."""
        return tuple(getattr(trace, "config", {}).get("images", []))
