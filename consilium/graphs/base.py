"""What every protocol is: one small interface, the shared run settings and the shared run skeleton.

A protocol (the consilium, the tumor board, the Specialist Turn, the single-specialist baseline) is a
package under ``consilium/graphs/`` with its state, graph, config, prompts, runner and record
type, and one :class:`Protocol` object that the rest of consilium asks: replay what to compare, the
cohort what a row holds, the judges which texts a trace offers, the viewer what to show. Nothing
above this layer tests a trace's type (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from consilium.agents.prompting import prompt_hashes
from consilium.cases import Case
from consilium.errors import BudgetExceededError, ModelError, UserError
from consilium.graphs.record import RecordSection
from consilium.graphs.view import Block
from consilium.log import get_logger
from consilium.models import CallRecorder, ChatModel
from consilium.models.backends.replay import ReplayModel
from consilium.observe import observe_run
from consilium.traces.build import base_fields
from consilium.traces.config import RunConfig
from consilium.traces.schema import TraceBase

if TYPE_CHECKING:
    from consilium.graphs.bounds import StageBounds
    from consilium.graphs.studio import StudioSpec

__all__ = ["ANALYSIS_NEEDS", "Analyses", "OnTrace", "Protocol", "RunModels", "RunOutcome", "config_record",
           "run_recorded", "start_run"]

log = get_logger(__name__)

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
            # LangSmith / OpenTelemetry see the run under its protocol's name, the prefix of ``event``.
            await observe_run(body, event.removesuffix("_failed"), **where)
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


#: An analysis a protocol may support: what it is called, and what it needs of a run, said when one is refused.
ANALYSIS_NEEDS: dict[str, tuple[str, str]] = {
    "networks": ("the network analysis", "a deliberation to draw: a panel's opinions, votes and report versions "
                                         "(a consilium-shaped record) or a meeting's turns (the board's)"),
    "ablation": ("an ablation", "a panel, a moderator and review rounds to re-run with one of them changed "
                               "(a consilium-shaped record)"),
    "human_seat": ("a person's seat", "a panel member whose opinion and votes a person can write instead"),
}


@dataclass(frozen=True)
class Analyses:
    """Which analyses apply to a protocol's runs, as its declaration says (docs/architecture.md).

    ``baseline``: the protocol ``compare`` sets it against, arm by arm (the consilium: ``single``);
    ``completed_columns``: the arms.csv columns a completed arm of it must have, and which are numbers
    (None: any text), checked when a report reads the run folder, of which ``optional_columns`` may be empty or
    absent; ``supports``: the analyses of :data:`ANALYSIS_NEEDS` its record allows."""

    baseline: str | None = None
    completed_columns: Mapping[str, type | None] = field(default_factory=lambda: {"model": None, "trace": None})
    optional_columns: frozenset[str] = frozenset()
    supports: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(self.supports - set(ANALYSIS_NEEDS))
        if unknown:
            raise ValueError(f"analyses: {unknown[0]!r} is not an analysis (known: {', '.join(ANALYSIS_NEEDS)})")


T = TypeVar("T", bound=TraceBase)
C = TypeVar("C", bound=RunConfig)

#: Told each trace of an arm as soon as it is done.
OnTrace = Callable[[TraceBase], None]


class Protocol(ABC, Generic[T, C]):
    """One protocol, as the rest of consilium sees it: everything another part asks of a protocol is declared
    here, so adding one touches its own package only (docs/architecture.md, "Add a protocol").

    ``name`` is its ``--protocol`` value and its traces' ``kind``; ``trace_model`` its record type;
    ``stages`` the stages its model calls are tagged with (consilium/stages.py: the usage tables list them, a call
    tagged otherwise is refused) and ``scripted`` the shipped scripted panel's answers for its own stages;
    ``variants`` are what one case is run in, of the kind ``variant_kind`` (a plural noun: ``formats``,
    ``modes`` or its own; the kind names the flag ``--<kind>`` of simulate and cohort, and the experiment file's
    key and API keyword ``<kind>``); ``analyses`` which analyses apply;
    ``compared_fields`` what replay requires to come out identical; ``bounds``, ``judged`` and ``judged_record``
    what a cohort's estimate counts before it runs.
    """

    name: ClassVar[str]
    trace_model: ClassVar[type[TraceBase]]
    config_model: ClassVar[type[RunConfig]]
    stages: ClassVar[tuple[str, ...]] = ()
    scripted: ClassVar[Mapping[str, tuple[Mapping[str, Any], ...]]] = {}
    variants: ClassVar[tuple[str, ...]] = ()
    variant_kind: ClassVar[str] = "formats"
    analyses: ClassVar[Analyses] = Analyses()
    compared_fields: ClassVar[tuple[str, ...]] = ("status",)
    #: Columns a cohort row of this protocol adds to arms.csv's shared ones.
    row_columns: ClassVar[tuple[str, ...]] = ()
    #: Whether its runs are shown the case's slide images (a cohort resolves them against each case's file).
    uses_slides: ClassVar[bool] = False
    #: Packages whose ``prompts/`` folders hold the protocol's own prompts (besides the shared ones).
    prompt_packages: ClassVar[tuple[str, ...]] = ()
    #: The components a completed trace offers a judge, by variant (what ``components`` gives at most): what a
    #: cohort's estimate counts judge calls on; a variant not here is estimated from a previous cohort alone.
    judged: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: Whether its traces carry the deliberation record the whole-case criteria are judged on (whole_case_record).
    judged_record: ClassVar[bool] = False

    @property
    def variant_flag(self) -> str:
        """The flag that picks its variants: ``--<variant_kind>``."""
        return f"--{self.variant_kind}"

    def supports(self, analysis: str) -> bool:
        return analysis in self.analyses.supports

    def require(self, analysis: str, command: str) -> None:
        """Refuse, in one line naming the protocol and what it lacks, an analysis its declaration does not allow."""
        if analysis not in self.analyses.supports:
            label, needs = ANALYSIS_NEEDS[analysis]
            raise UserError(f"{command}: protocol {self.name!r} lacks what {label} needs: {needs} (its "
                            f"Protocol.analyses does not list {analysis!r})")

    def bounds(self, variant: str, config: C) -> list[StageBounds] | None:
        """Each stage of a run in ``variant`` under ``config``: the fewest and most calls it makes, its prompt and
        answers (consilium/graphs/bounds.py); None: undeclared, its estimate needs a previous cohort (``--like``)."""
        return None

    def studio(self) -> StudioSpec | None:
        """Its graph for LangGraph's dev server and Studio (consilium/graphs/dev.py); None: it has none."""
        return None

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

    def summary(self, trace: T) -> list[str]:
        """The lines ``simulate`` prints about the run between its heading and its token counts."""
        return []

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

    def whole_case_record(self, trace: T) -> list[RecordSection]:
        """The run's whole record as the whole-case criteria are judged on it, section by section; none when
        the protocol has no deliberation to judge (or the run none to show)."""
        return []
