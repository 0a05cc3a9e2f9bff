"""The single-specialist baseline as the rest of consilium sees it (consilium/graphs/base.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, cast

from consilium.agents.prompting import SHARED
from consilium.agents.records import FORMATS, Format
from consilium.cases import Case
from consilium.graphs.base import OnTrace, Protocol, RunModels
from consilium.graphs.bounds import StageBounds, assignment_calls, prompt
from consilium.graphs.single.config import SingleConfig
from consilium.graphs.single.trace import SingleTrace
from consilium.graphs.view import Block, Heading, Note, Table, Text
from consilium.models.backends.replay import ReplayModel
from consilium.redact import clip

__all__ = ["SINGLE"]


class SingleProtocol(Protocol[SingleTrace, SingleConfig]):
    name: ClassVar[str] = "single"
    trace_model = SingleTrace
    config_model = SingleConfig
    stages = ("role_assignment", "opinion")
    variants = FORMATS
    compared_fields = ("status", "roles", "specialist", "answer")
    prompt_packages = ("consilium.graphs.single",)
    row_columns = ("roles",)
    judged: ClassVar[dict[str, tuple[str, ...]]] = {"structured": ("conclusion", "differential"),
                                                    "free-form": ("conclusion",)}

    def variant(self, trace: SingleTrace) -> str:
        return trace.format

    def bounds(self, variant: str, config: SingleConfig) -> list[StageBounds]:
        """The consilium's role assignment, then the primary role's one answer (graphs/single/graph.py)."""
        return [
            StageBounds("role_assignment", assignment_calls(config), prompt("assign_roles", SHARED), 0,
                        config.tokens_for("role_assignment"), shared=True, chair=True),
            StageBounds("opinion", (1, 1), prompt(f"answer_{variant.replace('-', '_')}", self.prompt_packages[0]), 0,
                        config.tokens_for("opinion")),
        ]

    def arm_variant(self, variant: str) -> str:
        return f"single-{variant}"

    async def run_arm(self, case: Case, variants: Sequence[str], models: RunModels, config: SingleConfig, *,
                      run_id: str, images: tuple[str, ...] = (), reuse: Sequence[SingleTrace] = (),
                      on_trace: OnTrace | None = None) -> list[SingleTrace]:
        from consilium.graphs.single.run import run_single_case  # LangGraph on use only

        shared = next((t for t in reuse if t.specialist), None)  # a finished format's specialist answers all
        return await run_single_case(case, cast(list[Format], list(variants)), models, config, run_id=run_id,
                                     shared=shared, on_trace=on_trace)

    async def replay(self, trace: SingleTrace, replay: ReplayModel) -> SingleTrace:
        from consilium.graphs.single.run import run_single  # LangGraph on use only

        return await run_single(Case.model_validate(trace.case), trace.format, RunModels(replay, replay),
                                SingleConfig.model_validate(trace.config.run_settings()), run_id=trace.run_id)

    def row(self, trace: SingleTrace) -> dict[str, Any]:
        return {"stop_reason": "", "roles": 1 if trace.specialist else 0}

    def components(self, trace: SingleTrace) -> dict[str, str]:
        """The answer is scored as a conclusion (as the consilium's final report is), its ranked differential
        as the differential."""
        if trace.answer is None:
            return {}
        texts = {"conclusion": trace.answer.text,
                 "differential": (trace.answer.sections or {}).get("final_differential", "")}
        return {name: text for name, text in texts.items() if text.strip()}

    def leading_diagnosis(self, trace: SingleTrace) -> str | None:
        if trace.answer is None:
            return None
        return (trace.answer.sections or {}).get("final_opinion", "").strip() or None

    def summary(self, trace: SingleTrace) -> list[str]:
        lines = [f"specialist: {r.label} [{r.category}] (alone; no panel)" for r in trace.roles
                 if r.id == trace.specialist]
        if trace.error:
            lines.append(f"error: {trace.error}")
        if trace.answer is not None:
            opinion = (trace.answer.sections or {}).get("final_opinion") or trace.answer.text
            lines.append("answer: " + clip(" ".join(opinion.split()), 400))
        return lines

    def view(self, trace: SingleTrace) -> list[Block]:
        primary = next((r for r in trace.roles if r.id == trace.specialist), None)
        blocks: list[Block] = [Heading("Specialist")]
        if primary is not None:
            blocks.append(Table(("role", "category", "justification"),
                                ((primary.label, primary.category_name, primary.justification),)))
        blocks += [Heading("Answer"), Text(trace.answer.text) if trace.answer else Note("no answer", emphasis=True)]
        return blocks


SINGLE = SingleProtocol()
