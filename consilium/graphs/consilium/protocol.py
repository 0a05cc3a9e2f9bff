"""The consilium as the rest of consilium sees it (consilium/graphs/base.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from consilium.agents.prompting import SHARED
from consilium.agents.records import FORMATS, Format, Report, render_sections
from consilium.cases import Case
from consilium.graphs.base import Analyses, OnTrace, Protocol, RunModels
from consilium.graphs.bounds import StageBounds, assignment_calls, prompt
from consilium.graphs.consilium.answers import TraceAnswers
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.record import whole_case_record
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.record import RecordSection
from consilium.graphs.view import Block, Diff, Heading, Note, Table, Text
from consilium.models.backends.replay import ReplayModel
from consilium.redact import clip

if TYPE_CHECKING:
    from consilium.graphs.studio import StudioSpec

__all__ = ["CONSILIUM"]


class ConsiliumProtocol(Protocol[Trace, ConsiliumConfig]):
    name: ClassVar[str] = "consilium"
    trace_model = Trace
    config_model = ConsiliumConfig
    stages = ("role_assignment", "opinion", "synthesis", "vote", "revision")
    variants = FORMATS
    analyses = Analyses(
        baseline="single",  # compare's consilium − single: the single-specialist baseline (MedAgentBoard)
        completed_columns={"model": None, "trace": None, "stop_reason": None, "rounds": int, "r1_dissent": float},
        optional_columns=frozenset({"r1_dissent"}),
        supports=frozenset({"networks", "ablation", "human_seat"}))
    compared_fields = ("status", "roles", "opinions", "reports", "rounds", "stop_reason")
    row_columns = ("rounds", "r1_dissent", "roles")
    judged: ClassVar[dict[str, tuple[str, ...]]] = {
        "structured": ("conclusion", "differential", "role_reasoning", "role_opinion"), "free-form": ("conclusion",)}
    judged_record = True  # its opinions, reports and votes: what the whole-case criteria are judged on

    def variant(self, trace: Trace) -> str:
        return trace.format

    def bounds(self, variant: str, config: ConsiliumConfig) -> list[StageBounds]:
        """ai-consilium.txt Fig. 2: roles, an opinion per role, a synthesis, then rounds of a vote per role and
        a revision between rounds (consilium/graphs/consilium/graph.py)."""
        c, fmt = config, variant.replace("-", "_")
        low_n, high_n = (len(c.panel),) * 2 if c.panel else (c.min_roles, c.max_roles)
        rounds = c.max_rounds if c.review else 0
        report = max(c.tokens_for("synthesis"), c.tokens_for("revision"))
        return [
            StageBounds("role_assignment", (0, 0) if c.panel else assignment_calls(c), prompt("assign_roles", SHARED),
                        0, c.tokens_for("role_assignment"), shared=True, chair=True),
            StageBounds("opinion", (low_n, high_n), prompt(f"opinion_{fmt}", SHARED), 0, c.tokens_for("opinion")),
            StageBounds("synthesis", (1, 1), prompt(f"synthesis_{fmt}", SHARED), high_n * c.tokens_for("opinion"),
                        c.tokens_for("synthesis"), chair=True),
            StageBounds("vote", (low_n * min(rounds, 1), high_n * rounds), prompt("vote", SHARED), report,
                        c.tokens_for("vote")),
            # A revision follows every round but the last (at max_rounds the tally stops: round_limit).
            StageBounds("revision", (0, max(rounds - 1, 0)), prompt(f"revision_{fmt}", SHARED),
                        report + high_n * c.tokens_for("vote"), c.tokens_for("revision"), chair=True),
        ]

    async def run_arm(self, case: Case, variants: Sequence[str], models: RunModels, config: ConsiliumConfig, *,
                      run_id: str, images: tuple[str, ...] = (), reuse: Sequence[Trace] = (),
                      on_trace: OnTrace | None = None) -> list[Trace]:
        from consilium.graphs.consilium.run import run_case  # LangGraph on use only

        # The panel of a finished format is the panel of the others (ai-consilium.txt, Fig. 2a).
        done = next((t for t in reuse if t.roles), None)
        roles = done.roles if done is not None else None
        calls = [c for c in done.calls if c.stage == "role_assignment"] if done is not None else None
        return await run_case(case, cast(list[Format], list(variants)), models, config, run_id=run_id,
                              shared_roles=roles, shared_calls=calls, on_trace=on_trace)

    async def replay(self, trace: Trace, replay: ReplayModel) -> Trace:
        from consilium.graphs.consilium.human_run import HumanRun  # LangGraph on use only
        from consilium.graphs.consilium.run import run_format

        config = ConsiliumConfig.model_validate(trace.config.run_settings())
        # A person's answers come from the trace: no prompt, and no model call for them.
        human = HumanRun(trace.human.requested, TraceAnswers(trace.human)) if trace.human is not None else None
        return await run_format(Case.model_validate(trace.case), trace.format, RunModels(replay, replay), config,
                                run_id=trace.run_id, human=human)

    def studio(self) -> StudioSpec:
        from consilium.graphs.consilium.studio import SPEC  # LangGraph on use only

        return SPEC

    def compared(self, recorded: Trace, replayed: Trace) -> tuple[str, ...]:
        both = recorded.human is not None and replayed.human is not None
        return (*self.compared_fields, "human") if both else self.compared_fields

    def row(self, trace: Trace) -> dict[str, Any]:
        rounds = trace.rounds
        return {"stop_reason": trace.stop_reason or "", "rounds": len(rounds),
                "r1_dissent": rounds[0].dissent_fraction if rounds else "", "roles": len(trace.roles)}

    def components(self, trace: Trace) -> dict[str, str]:
        """ai-consilium.txt, Table 10 and Table 29: *conclusion* is the final report, *differential* its
        ranked differential; *role_reasoning* is the primary role's structured opinion without its final
        conclusion and *role_opinion* that conclusion alone (both only in the structured format)."""
        texts: dict[str, str] = {}
        if trace.final_report is not None:
            texts["conclusion"] = trace.final_report.text
            differential = (trace.final_report.sections or {}).get("final_differential")
            if differential:
                texts["differential"] = differential
        primary = next((r for r in trace.roles if r.primary), None)
        opinion = next((o for o in trace.opinions if primary and o.role == primary.id), None)
        if opinion is not None and opinion.sections:
            reasoning = {k: v for k, v in opinion.sections.items() if k != "final_conclusion"}
            texts["role_reasoning"] = render_sections(reasoning)
            texts["role_opinion"] = opinion.sections.get("final_conclusion", "")
        return {name: text for name, text in texts.items() if text.strip()}

    def leading_diagnosis(self, trace: Trace) -> str | None:
        """The structured final report's final opinion (the task asks for "your most likely diagnosis,
        differential diagnoses", neural-medbench.txt L403); None without one."""
        if trace.final_report is None:
            return None
        return (trace.final_report.sections or {}).get("final_opinion", "").strip() or None

    def whole_case_record(self, trace: Trace) -> list[RecordSection]:
        return whole_case_record(trace)

    def summary(self, trace: Trace) -> list[str]:
        lines = [f"role: {r.label} [{r.category}] ({'primary' if r.primary else 'supporting'})" for r in trace.roles]
        if trace.human is not None:
            seat = "added to the panel" if trace.human.added else "a seat of the assigned panel"
            sources = " and ".join(sorted({i.source for i in trace.human.inputs})) or "no one"
            lines.append(f"person at the table: {trace.human.label} ({seat}); {len(trace.human.inputs)} answers "
                         f"from the {sources}, no model call")
        dissent = ", ".join(f"r{r.round} {r.dissent_fraction:.2f}" for r in trace.rounds)
        stop = trace.stop_reason or "-"
        lines.append(f"rounds: {len(trace.rounds)} (dissent fraction {dissent or '-'}); stop: {stop}")
        if trace.error:
            lines.append(f"error: {trace.error}")
        if trace.final_report is not None:
            lines.append(f"final conclusion: {conclusion_line(trace.final_report)}")
        return lines

    def view(self, trace: Trace) -> list[Block]:
        blocks: list[Block] = [
            Heading("Panel"),
            Table(("role", "category", "kind", "justification"),
                  tuple((r.label, r.category_name, "primary" if r.primary else "supporting", r.justification)
                        for r in trace.roles)),
            *([Note(f"{trace.human.label} was played by a person ({len(trace.human.inputs)} answers).",
                    emphasis=True)] if trace.human is not None else []),
            Heading("Independent opinions")]
        labels = {r.id: r.label for r in trace.roles}
        for opinion in trace.opinions:
            blocks += [Heading(labels.get(opinion.role, opinion.role), 4), Text(opinion.text)]
        previous = None
        for report in trace.reports:
            blocks.append(Heading("Initial report" if report.version == 1 else
                                  f"Report version {report.version} (after round {report.round})"))
            if report.change_summary:
                blocks.append(Note(f"Change: {report.change_summary}", emphasis=True))
            blocks.append(Text(report.text))
            if previous is not None:
                blocks.append(Diff(previous.text, report.text, f"v{previous.version}", f"v{report.version}",
                                   f"Differences from version {previous.version}"))
            previous = report
        for rnd in trace.rounds:
            blocks.append(Heading(f"Review round {rnd.round} (report v{rnd.report_version}, dissent "
                                  f"{rnd.dissent_fraction:.0%})"))
            blocks.append(Table(("role", "vote", "reason", "requested change"),
                                tuple((labels.get(v.role, v.role), v.vote, v.reason, v.requested_change or "")
                                      for v in rnd.votes),
                                tuple(("", v.vote, "", "") for v in rnd.votes)))
        blocks.append(Note(trace.stop_reason or "-", label="Stop reason:"))
        return blocks


def conclusion_line(report: Report) -> str:
    """A report's final opinion (its text when free-form) on one line of at most 400 characters."""
    return clip(" ".join(((report.sections or {}).get("final_opinion") or report.text).split()), 400)


CONSILIUM = ConsiliumProtocol()
