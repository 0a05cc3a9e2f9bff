"""The judge runner: one call per (component, criterion), concurrently, at temperature 0; the
four-decision rubric's four scores come from one call with one schema (opentumorboard.txt App. C.3).

Judging reads in one pass, a module a stage, each keyed by the rubric's scoring kind (kinds.py): the rubric
(rubric.py) → the calls each component needs (tasks.py) → their prompts (prompting.py) → each call asked in the
judge's decoding order (asking.py, decoding.py: constrained from the first attempt, or the paper's repairs then
one constrained attempt; then not evaluable: a score is never guessed) → its answer checked (answers.py) and read
into an item (parsing.py) → each component's scores (component_scores.py, aggregate.py); the judgement is
written here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from consilium.cases import Case
from consilium.graphs.registry import protocol_of
from consilium.judges.aggregate import aggregate, overlap_metrics
from consilium.judges.answers import Scope
from consilium.judges.asking import ask
from consilium.judges.components import component_texts, leading_diagnosis, missing_turn_reference, turn_reference
from consilium.judges.decoding import JudgeDecoding, decoding_models, resolve_decoding
from consilium.judges.frozen_scope import ScopeFailure
from consilium.judges.kinds import ScoringKind
from consilium.judges.otb_prompting import prompt_sha
from consilium.judges.otb_steps import (
    SCOPE_STAGE,
    answer_failure,
    board_format,
    format_failure,
    format_record,
    scope_of,
    turn_answer,
    unjudged,
)
from consilium.judges.parsing import not_evaluable
from consilium.judges.prompting import judge_prompt_hash
from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import Rubric
from consilium.judges.scope_labels import FrozenScope
from consilium.judges.slides import judge_slides
from consilium.judges.tasks import JudgeInputs, JudgeTask, judge_tasks
from consilium.models import CallRecorder, ChatModel, GenerationSettings
from consilium.traces.schema import TraceBase, UsageSummary

__all__ = ["JudgeSetup", "judge_trace", "reference_for"]

#: Any protocol's trace (the judge asks the trace's protocol what it offers).
AnyTrace = TraceBase


@dataclass(frozen=True)
class JudgeSetup:
    model: ChatModel
    settings: GenerationSettings = field(
        default_factory=lambda: GenerationSettings(temperature=0.0, max_tokens=512, seed=0))
    max_repairs: int = 2
    k: int = 5
    reference_answer: str | None = None
    #: The four-decision scope protocol (opentumorboard.txt App. E.2 L194): None picks frozen when the
    #: case labels its decisions (``reference.decisions``), judge otherwise.
    scope: Scope | None = None
    #: The judge's spec as given (``--judge-model``), naming it on a jury; None: its model id.
    name: str | None = None
    #: The decoding order asked for (``--judge-decoding``); None: the rubric's pin, else the backend's default.
    decoding: JudgeDecoding | None = None
    #: A user's own system prompts (``--prompt-file STAGE=PATH``), by stage: a rubric's name, or ``otb-scope`` for
    #: the candidate-blind scope call; each replaces consilium's system prompt there, and is recorded by hash.
    prompts: Mapping[str, str] = field(default_factory=dict)
    #: The frozen scope cache's folder; None: ``otb-scope/`` beside the response cache (frozen_scope.py).
    scope_cache: Path | None = None


def reference_for(rubric: Rubric, case: Case, reference_answer: str | None = None) -> str | None:
    ref = case.reference
    if rubric.reference == "none":
        return ""
    if rubric.reference == "answer":
        return reference_answer
    if ref is None:
        return None
    # A blank reference text is none: there is nothing to compare with (consilium/cohort/cases.py checks alike).
    if rubric.reference == "diagnosis":
        return ref.diagnosis if ref.diagnosis and ref.diagnosis.strip() else None
    if rubric.reference in ("conclusion", "decisions"):
        return ref.conclusion if ref.conclusion and ref.conclusion.strip() else None
    # Signed criteria: each call carries its one criterion in the task, as NPCBench's judge sees it.
    return "" if ref.rubric else None


def _tasks(kind: ScoringKind, inputs: JudgeInputs, texts: dict[str, str], components: list[str]) -> list[JudgeTask]:
    """The calls for every component asked for that the trace has, as the rubric's scoring kind makes them."""
    return [task for component in components if component in texts
            for task in judge_tasks(kind, inputs, component, texts[component])]


def _no_reference(rubric: Rubric, tasks: list[JudgeTask], reason: str | None = None) -> list[JudgementItem]:
    return [not_evaluable(t, reason or f"the case has no reference {rubric.reference.replace('_', ' ')}")
            for t in tasks]


async def judge_trace(trace: AnyTrace, trace_name: str, rubric: Rubric, setup: JudgeSetup,
                      components: list[str] | None = None) -> Judgement:
    case = Case.model_validate(trace.case)
    protocol = protocol_of(trace)
    texts = component_texts(trace)
    wanted = [c for c in (components or rubric.components) if c in rubric.components]
    answer = turn_reference(trace, case, setup.reference_answer)  # a turn's own reference answer (App. C.1)
    reference = reference_for(rubric, case, answer.text if answer else None)
    recorder = CallRecorder()
    order = resolve_decoding(setup.model, setup.decoding, rubric.decoding)
    relaxed, strict = decoding_models(setup.model, recorder, setup.max_repairs, order)
    kind = rubric.kind
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    system = setup.prompts.get(rubric.name)
    # The authors' code judges a board response only as its gate allows (otb_steps), and fixes scope first.
    fmt = board_format(rubric, trace)
    failed = format_failure(rubric, fmt, str(getattr(trace, "transcript", "")), trace.case_id) if fmt else None
    official = turn_answer(trace) if rubric.layout == "otb" and "answer" in rubric.components else None
    if official is not None:  # a Specialist Turn is judged on the answer the official extraction finds
        texts = {**texts, "answer": official.text or ""}
        failed = failed or answer_failure(official, trace.case_id)
    scope = None if failed else await scope_of(rubric, setup.scope, case, reference, relaxed, strict, setup.settings,
                                               setup.model.model_id, setup.scope_cache, setup.prompts.get(SCOPE_STAGE))
    frozen = scope if isinstance(scope, FrozenScope) else None
    # the user's prompts this judgement was made with: the rubric's, and the scope call's where one was made
    used = {stage: text for stage, text in setup.prompts.items() if stage == rubric.name or
            (stage == SCOPE_STAGE and (isinstance(scope, ScopeFailure) or (frozen and frozen.source == "judge")))}
    inputs = JudgeInputs(rubric=rubric, case=case, case_text=case.render(), reference=reference or "", trace=trace,
                         model=setup.model, settings=setup.settings, max_repairs=setup.max_repairs, k=setup.k,
                         scope=setup.scope, reference_answer=setup.reference_answer, leading=leading_diagnosis(trace),
                         frozen=frozen, system_prompt=system)
    blocked = failed or (scope.reason if isinstance(scope, ScopeFailure) else None) or (
        f"the case has no reference {rubric.reference} to fix the decisions' scope from"
        if kind.always_frozen and frozen is None else None)
    tasks = [] if blocked else _tasks(kind, inputs, texts, wanted)
    # Criterion rubrics (AI Consilium) judge against the case; their reference only informs one
    # criterion, so a case without one is still judged. The others compare with the reference.
    if blocked:
        items = unjudged(rubric, [c for c in wanted if c in texts], blocked,
                         scope.failed_calls if isinstance(scope, ScopeFailure) else None)
    elif (reference is None and kind.needs_reference) or (kind.criteria_from_case and not tasks):
        items = _no_reference(rubric, tasks, missing_turn_reference(case) if answer is None and
                              protocol.question(trace) is not None and rubric.reference == "answer" else None) or [
            JudgementItem(component=c, criterion="*", score=None, not_evaluable=True,
                          reason=f"the case has no reference {rubric.reference.replace('_', ' ')}")
            for c in wanted if c in texts]
    else:
        items = list(await asyncio.gather(*(ask(kind, relaxed, strict, t) for t in tasks)))
    if not items:
        # The trace has none of the components asked for (a board rubric on a consilium trace, a failed
        # run): recorded as not evaluable, so the rubric shows in the coverage instead of vanishing.
        items = [JudgementItem(component=c, criterion="*", score=None, not_evaluable=True,
                               reason=f"the {protocol.name} trace has no {c}") for c in wanted]
    return Judgement(
        trace=trace_name, trace_kind=protocol.name, trace_run_id=trace.run_id, case_id=trace.case_id,
        variant=protocol.variant(trace) if protocol.variants else None, rubric=rubric.name,
        rubric_version=rubric.version, rubric_source=rubric.source, judge_model=setup.model.model_id,
        settings=setup.settings, decoding=order, prompt_hash=judge_prompt_hash(rubric, system), items=items,
        frozen_scope=frozen, response_format=format_record(fmt) if fmt is not None else
        {"answer_extraction": official.method} if official is not None else None,
        prompt_files=prompt_sha(used),
        notes=list(judge_slides(rubric, trace, case, setup.model).notes),  # slides a text-only judge was not sent
        aggregates=aggregate(rubric, items, setup.k), overlap=overlap_metrics(case, texts, answer),
        usage=UsageSummary.from_ledger(recorder.ledger), calls=sorted(recorder.calls, key=lambda c: c.index),
        started_at=started_at, wall_s=round(time.perf_counter() - started, 3),
    )
