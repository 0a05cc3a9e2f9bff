"""A protocol from outside consilium, installed by a test as its own package: the primary specialist's second look
at the case, after the consilium's own role assignment, at one of two tempos.

What no built-in protocol has: a stage (``second_look``) and a variant kind (``tempos``: brisk, unhurried). It
declares them, with the shipped scripted panel's answers for its stage, its record type, its analyses (none
beyond the defaults), what a cohort's estimate counts (its stages' calls, the components a judge scores) and a
Studio graph; nothing in consilium names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from consilium.agents import moderator
from consilium.agents.prompting import SHARED
from consilium.agents.records import AssignedRole
from consilium.cases import Case
from consilium.graphs.base import Protocol, RunModels, config_record, run_recorded, start_run
from consilium.graphs.bounds import Prompt, StageBounds, assignment_calls, prompt
from consilium.graphs.studio import StudioJob, StudioOutput, StudioSettings, StudioSpec
from consilium.graphs.view import Block, Heading, Text
from consilium.models import CallRecorder, CallTag, Message, ModelRequest, for_run
from consilium.models.backends.replay import ReplayModel
from consilium.traces.config import ConfigRecord, RunConfig
from consilium.traces.schema import TraceBase

Tempo = Literal["brisk", "unhurried"]
TEMPOS: tuple[Tempo, ...] = ("brisk", "unhurried")
CASE = Path("examples/cases/diagnostic-myocarditis.yaml")  # a Studio run's default: relative to the server's folder
ASK = "Take a {tempo} second look at this case."


class LookConfig(RunConfig):
    STAGE_TOKENS: ClassVar[dict[str, int]] = {"role_assignment": 768, "second_look": 300}
    max_tokens: dict[str, int] = Field(default_factory=lambda: {"role_assignment": 768, "second_look": 300})


class LookRecord(LookConfig, ConfigRecord):
    pass


class LookTrace(TraceBase):
    kind: Literal["second-look"] = "second-look"
    config: LookRecord
    tempo: Tempo
    roles: list[AssignedRole]
    verdict: str | None


async def run_look(case: Case, tempo: Tempo, models: RunModels, config: LookConfig, run_id: str) -> LookTrace:
    recorder = CallRecorder()
    model = for_run(models.panel, recorder, max_repairs=config.max_repairs)
    state: dict[str, Any] = {}

    async def body() -> None:
        state["roles"] = await moderator.assign_roles(model, case.render(), min_roles=config.min_roles,
                                                      max_roles=config.max_roles,
                                                      settings=config.settings("role_assignment"))
        primary = next(r for r in state["roles"] if r.primary)
        ask = Message(role="user", content=f"{ASK.format(tempo=tempo)}\n\n{case.render()}")
        request = ModelRequest(messages=(ask,), settings=config.settings("second_look"),
                               tag=CallTag(stage="second_look", role=primary.id))
        state["verdict"] = (await model.generate(request)).text

    outcome = await run_recorded(body, start_run(recorder), wall_limit_s=config.wall_limit_s, event="look_failed")
    return LookTrace(**outcome.trace_fields(case, run_id=run_id, model=models.panel.model_id,
                                            config=config_record(config)),
                     tempo=tempo, roles=state.get("roles", []), verdict=state.get("verdict"))


class LookSettings(StudioSettings, total=False):
    tempo: Tempo


class LookOutput(StudioOutput, total=False):
    tempo: Tempo
    verdict: str | None


async def _studio_run(job: StudioJob) -> LookTrace:
    tempo: Tempo = job.settings.get("tempo", "brisk")
    return await run_look(job.case, tempo, RunModels(job.panel, job.moderator), job.config(LookConfig), job.run_id)


def _no_graph() -> Any:
    from langgraph.graph import END, START, StateGraph  # the run is plain code: Studio draws one node

    graph = StateGraph(dict)
    graph.add_node("look", lambda state: state)
    graph.add_edge(START, "look")
    graph.add_edge("look", END)
    return graph.compile()


class SecondLook(Protocol[LookTrace, LookConfig]):
    name: ClassVar[str] = "second-look"
    trace_model = LookTrace
    config_model = LookConfig
    stages = ("role_assignment", "second_look")
    # The shipped panel answers the plugin's own stage; the unhurried look at the anticoagulation case fails.
    scripted: ClassVar[dict[str, tuple[dict[str, Any], ...]]] = {"second_look": (
        {"contains_all": ["Take a unhurried", "atrial fibrillation"], "fail": "model"},
        {"response": "Second look by {role}: the working diagnosis stands."},
    )}
    variants = TEMPOS
    variant_kind = "tempos"
    compared_fields = ("status", "roles", "verdict")
    judged: ClassVar[dict[str, tuple[str, ...]]] = dict.fromkeys(TEMPOS, ("conclusion",))

    def bounds(self, variant: str, config: LookConfig) -> list[StageBounds]:
        """Each tempo assigns its own roles (on the panel's model), then the primary role looks once, in prose."""
        return [StageBounds("role_assignment", assignment_calls(config), prompt("assign_roles", SHARED), 0,
                            config.tokens_for("role_assignment")),
                StageBounds("second_look", (1, 1), Prompt("", ASK.format(tempo="")), 0,
                            config.tokens_for("second_look"), checked=False)]

    def variant(self, trace: LookTrace) -> str:
        return trace.tempo

    def arm_variant(self, variant: str) -> str:
        return f"look-{variant}"

    async def run_arm(self, case: Case, variants: Any, models: RunModels, config: LookConfig, *, run_id: str,
                      images: tuple[str, ...] = (), reuse: Any = (), on_trace: Any = None) -> list[LookTrace]:
        return [await run_look(case, tempo, models, config, run_id) for tempo in variants]

    async def replay(self, trace: LookTrace, replay: ReplayModel) -> LookTrace:
        config = LookConfig.model_validate(trace.config.run_settings())
        return await run_look(Case.model_validate(trace.case), trace.tempo, RunModels(replay, replay), config,
                              trace.run_id)

    def row(self, trace: LookTrace) -> dict[str, Any]:
        return {"stop_reason": ""}

    def components(self, trace: LookTrace) -> dict[str, str]:
        return {"conclusion": trace.verdict} if trace.verdict else {}

    def summary(self, trace: LookTrace) -> list[str]:
        return [f"second look: {trace.verdict}" if trace.verdict else "no second look"]

    def view(self, trace: LookTrace) -> list[Block]:
        return [Heading("Second look"), Text(trace.verdict or "")]

    def studio(self) -> StudioSpec:
        return StudioSpec(LookSettings, LookOutput, CASE, _studio_run, _no_graph)


PROTOCOL = SecondLook()
