"""The judge runner: one call per (component, criterion), concurrently, at temperature 0; the
four-decision rubric's four scores come from one call with one schema (opentumorboard.txt App. C.3).

Invalid judge output goes back to the judge with the validation error a
bounded number of times with the schema described in the prompt only; then
one schema-constrained attempt (grammar or response_format, where the backend
has it); then the item is recorded as not evaluable with the reason. A score
is never guessed.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from consilium.cases import Case
from consilium.errors import BudgetExceededError, ModelError, ModelOutputError
from consilium.judges.aggregate import aggregate, overlap_metrics
from consilium.judges.answers import (
    Scope,
    criterion_schema,
    criterion_shape,
    decision_scope,
    decisions_schema,
    decisions_shape,
    partial_decisions,
)
from consilium.judges.components import (
    component_texts,
    leading_diagnosis,
    missing_turn_reference,
    ranked_candidates,
    turn_reference,
)
from consilium.judges.prompting import anchors_text, judge_messages, judge_prompt_hash, load_judge_prompt
from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import Criterion, Rubric
from consilium.judges.slides import judge_slides
from consilium.judges.whole_case import fit_whole_case, whole_case_stages
from consilium.models import CallRecorder, CallTag, ChatModel, GenerationSettings, ModelRequest, OutputSchema, for_run
from consilium.models.tokens import context_window
from consilium.traces.schema import BoardTrace, Trace, TurnTrace, UsageSummary

__all__ = ["JudgeSetup", "judge_trace", "reference_for"]

AnyTrace = Trace | BoardTrace | TurnTrace


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


@dataclass(frozen=True)
class _Task:
    component: str
    criterion: str
    request: ModelRequest
    detail: dict[str, Any]
    reads: str  # how to read the validated answer: "criterion", "signed", "match" or "decision"
    once: _Once | None = None  # the one call several items read (the four-decision rubric's)
    unfit: str | None = None  # why the prompt is not sent: it cannot fit the judge's context (whole_case.py)


class _Once:
    """One judge call whose answer several items read: the first to ask makes it, the others await it.
    ``salvage`` reads what it can of an answer that stayed invalid (None: nothing)."""

    def __init__(self, salvage: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        self.salvage = salvage
        self._answer: asyncio.Future[tuple[dict[str, Any] | None, str]] | None = None

    async def answer(self, ask: Callable[[], Awaitable[tuple[dict[str, Any] | None, str]]]) \
            -> tuple[dict[str, Any] | None, str]:
        if self._answer is None:
            self._answer = asyncio.ensure_future(ask())
        return await self._answer


def reference_for(rubric: Rubric, case: Case, reference_answer: str | None = None) -> str | None:
    ref = case.reference
    if rubric.reference == "none":
        return ""
    if rubric.reference == "answer":
        return reference_answer
    if ref is None:
        return None
    if rubric.reference == "diagnosis":
        return ref.diagnosis
    if rubric.reference in ("conclusion", "decisions"):
        return ref.conclusion
    # Signed criteria: each call carries its one criterion in the task, as NPCBench's judge sees it.
    return "" if ref.rubric else None


def _criterion_schema(rubric: Rubric) -> OutputSchema:
    """The rubric's answer schema: the paper's own layout where the rubric names one (answers.py)."""
    return criterion_schema(rubric)


_SIGNED = OutputSchema(name="CriterionMet", json_schema={
    "type": "object", "additionalProperties": False, "required": ["explanation", "criteria_met"],
    "properties": {"explanation": {"type": "string", "maxLength": 1000}, "criteria_met": {"type": "boolean"}}})
_MATCH = OutputSchema(name="DiagnosisMatch", json_schema={
    "type": "object", "additionalProperties": False, "required": ["rationale", "match"],
    "properties": {"rationale": {"type": "string", "maxLength": 600}, "match": {"type": "boolean"}}})


def _criterion_task(rubric: Rubric, criterion: Criterion) -> str:
    flags = "".join(f"\nAlso report {f.id}: {f.definition}" for f in rubric.flags)
    # opentumorboard.txt App. C.1 L172 and C.2 L178 put the score before the rationale.
    template = "criterion_score_first" if rubric.answer.score_first else "criterion"
    return load_judge_prompt(template).format(
        component="{component}", criterion_name=criterion.name, criterion_definition=criterion.definition,
        anchors=anchors_text(rubric, criterion), flags=flags, rationale_max_chars=rubric.rationale_max_chars,
        rationale_required="; the rationale must not be empty" if rubric.answer.rationale_required else "",
        not_evaluable=(' If the text gives you nothing to judge this criterion on, answer "not_evaluable" as the '
                       "score and say why in the rationale.") if rubric.not_evaluable else "",
        output_shape=criterion_shape(rubric))


def _decisions_task(rubric: Rubric, component: str, scope: Scope, locked: frozenset[str]) -> str:
    """The four-decision task (opentumorboard.txt App. C.3 L184): every dimension in one answer."""
    dimensions = "\n".join(f"- {c.id} ({c.name}): {c.definition.strip()}" for c in rubric.criteria_for(component))
    if scope == "frozen":
        fixed = ", ".join(c.id for c in rubric.criteria if c.id in locked)
        scope_text = ("Scope was fixed beforehand by a candidate-blind reading of the reference conclusion: "
                      + (f"the dimensions it leaves absent are locked to -1 ({fixed})." if fixed else
                         "it leaves no dimension absent."))
    else:
        scope_text = "Decide each dimension's scope from the reference conclusion alone, before reading the candidate."
    return load_judge_prompt("four_decision").format(
        component=component, dimensions=dimensions, anchors=anchors_text(rubric, rubric.criteria[0]),
        scope=scope_text, rationale_max_chars=rubric.rationale_max_chars,
        output_shape=decisions_shape(rubric, locked, scope == "frozen"))


def _tasks(rubric: Rubric, case: Case, texts: dict[str, str], reference: str, setup: JudgeSetup,
           components: list[str], leading: str | None = None, trace: AnyTrace | None = None) -> list[_Task]:
    """One request per (component, criterion). Model and case text reach the judge only as tagged,
    escaped sections (:func:`judge_messages`); a task is this project's wording alone (issue 15, item 18)."""
    case_text = case.render()
    tasks: list[_Task] = []

    def add(component: str, criterion: str, candidate: str, task: str, schema: OutputSchema, reads: str,
            detail: dict[str, Any], extra: tuple[tuple[str, str], ...] = ()) -> None:
        slides = judge_slides(rubric, trace, case, setup.model).message_fields()  # App. C.1: image, then caption
        request = ModelRequest(messages=judge_messages(rubric, case_text, reference, candidate, task, extra, **slides),
                               settings=setup.settings, schema=schema,
                               tag=CallTag(stage="judge", role=f"{component}:{criterion}"))
        tasks.append(_Task(component, criterion, request, detail, reads))

    for component in components:
        text = texts.get(component)
        if text is None:
            continue
        if rubric.scoring == "signed_criteria":
            for crit in case.reference.rubric if case.reference else []:
                note = ("criteria_met is true when the candidate makes this error." if crit.kind != "requirement"
                        else "criteria_met is true when the candidate satisfies this requirement.")
                # The criterion is case text: it goes in its own data section, never in the task.
                add(component, crit.id, text, load_judge_prompt("signed_criterion").format(
                    component=component, criterion_kind=crit.kind.replace("_", " "),
                    criterion_weight=f"{crit.weight:g}", criterion_note=note),
                    _SIGNED, "signed",
                    {"kind": crit.kind, "weight": crit.weight}, (("criterion", crit.text),))
        elif rubric.scoring == "diagnosis_match":
            rules = " ".join(rubric.rules)
            if component != "differential":
                add(component, "final_conclusion", text, load_judge_prompt("diagnosis").format(
                    which="the candidate's final conclusion", rules=rules), _MATCH, "match",
                    {"rank": 1, "candidate": text})
                continue
            # pass@1 is the leading diagnosis, pass@k adds the differential (neural-medbench.txt L249, L403).
            for rank, (source, item) in enumerate(ranked_candidates(leading, text, setup.k), 1):
                which = f"ranked {rank}" + (", the most likely diagnosis" if source == "final_opinion" else "")
                add(component, f"rank_{rank}", item, load_judge_prompt("diagnosis").format(which=which, rules=rules),
                    _MATCH, "match", {"rank": rank, "candidate": item, "source": source})
        elif rubric.scoring == "weighted_decisions":
            # One call, one schema for the four scores (opentumorboard.txt App. C.3 L186); one item each.
            scope, locked = decision_scope(setup.scope, case, f"case {case.id}")
            add(component, "decisions", text, _decisions_task(rubric, component, scope, locked),
                decisions_schema(rubric, locked, scope == "frozen"), "decision", {})
            call, once = tasks.pop(), _Once(partial_decisions(rubric, locked, scope == "frozen"))
            tasks.extend(replace(call, criterion=c.id, once=once, detail={
                "weight": c.weight, "scope": scope, "locked": c.id in locked}) for c in rubric.criteria_for(component))
        else:
            schema = _criterion_schema(rubric)
            criteria = rubric.criteria_for(component)
            extra, note, about = _turn_inputs(trace, case, setup) if component == "answer" else ((), "", {})
            # ai-consilium.txt Table 29 (L260): the whole-case scores are judged on every stage; the record
            # is fitted once, to the longest of their tasks, so the three see the same one.
            whole = {c.id: f"{load_judge_prompt('whole_case')}\n\n{_criterion_task(rubric, c)}"
                     .replace("{component}", component) for c in criteria if c.whole_case}
            stages = whole_case_stages(trace) if whole and isinstance(trace, Trace) else []
            if stages:
                sections, record = fit_whole_case(
                    stages, partial(judge_messages, rubric, case_text, reference, text, max(whole.values(), key=len)),
                    context_window(setup.model), setup.settings.max_tokens, setup.max_repairs)
                unfit = None if record["fits"] is not False else (
                    f"the whole case does not fit the judge's context of {record['context_tokens']} tokens even "
                    f"with the earlier stages shortened (about {record['prompt_tokens_estimate']} prompt tokens, "
                    f"room for {record['prompt_room']})")
            for criterion in criteria:
                detail = {"weight": criterion.weight, "whole_case": criterion.whole_case, **about}
                if criterion.id in whole and stages:
                    add(component, criterion.id, text, whole[criterion.id], schema, "criterion",
                        {**detail, "whole_case_input": record}, sections)
                    tasks[-1] = replace(tasks[-1], unfit=unfit)
                else:
                    task = note + _criterion_task(rubric, criterion).replace("{component}", component)
                    add(component, criterion.id, text, task, schema, "criterion", detail, extra)
    return tasks


def _turn_inputs(trace: AnyTrace | None, case: Case, setup: JudgeSetup) \
        -> tuple[tuple[tuple[str, str], ...], str, dict[str, Any]]:
    """A Specialist Turn's question and target role as data sections, the task's note on them, and the
    item detail naming the reference answer used (opentumorboard.txt App. C.1 L170: the judge is given
    "the supplied case evidence, question, target specialist role, and reference expert answer")."""
    if not isinstance(trace, TurnTrace):
        return (), "", {}
    answer = turn_reference(trace, case, setup.reference_answer)
    return ((("question", trace.question), ("role", f"{trace.role} (catalogue category: {trace.role_category})")),
            load_judge_prompt("turn") + "\n\n", {"reference_answer": answer.source if answer else None})


async def _answer(relaxed: ChatModel, strict: ChatModel, task: _Task) -> tuple[dict[str, Any] | None, str]:
    """The validated answer (None when it stayed invalid, or what ``task.once`` salvages of it) and
    the last validation error."""
    schema = task.request.output_schema
    assert schema is not None
    error, last_text = "", ""
    for model, request in ((relaxed, task.request.model_copy(update={"schema_": schema.unenforced()})),
                           (strict, task.request)):
        try:
            return (await model.generate(request)).parsed, ""
        except ModelOutputError as exc:
            error, last_text = _ATTEMPTS.sub("", _unplaced(str(exc)), count=1), exc.last_text
    salvaged = task.once.salvage(last_text) if task.once and task.once.salvage else None
    return salvaged, error


async def _ask(relaxed: ChatModel, strict: ChatModel, task: _Task) -> JudgementItem:
    if task.unfit is not None:
        return JudgementItem(component=task.component, criterion=task.criterion, score=None, not_evaluable=True,
                             reason=task.unfit, detail=task.detail)
    try:
        if task.once is None:
            parsed, error = await _answer(relaxed, strict, task)
        else:
            parsed, error = await task.once.answer(lambda: _answer(relaxed, strict, task))
    except (ModelError, BudgetExceededError) as exc:
        # One failed call voids its own item only: a long whole-case prompt a server refuses (its
        # context unknown here) must not take the per-output criteria of the trace with it.
        return JudgementItem(component=task.component, criterion=task.criterion, score=None, not_evaluable=True,
                             reason=f"judge call failed: {_unplaced(str(exc))}", detail=task.detail)
    if parsed is None:
        return JudgementItem(component=task.component, criterion=task.criterion, score=None, not_evaluable=True,
                             reason=f"invalid judge output, also under schema-constrained decoding: {error}",
                             detail=task.detail)
    return _read(task, parsed, error)


_PLACE = re.compile(r"^stage \S+ \(role [^,]*, round [^)]*\): ")
_ATTEMPTS = re.compile(r"^invalid \S+ output after \d+ attempts: ")  # the reason says it already


def _unplaced(message: str) -> str:
    """An error message without the call's place (``stage judge (role conclusion:c1, round None): ``):
    the item already names its component and criterion, and reasons that read alike across items
    can be counted together (:mod:`consilium.judges.coverage`)."""
    return _PLACE.sub("", message, count=1)


def _read(task: _Task, parsed: dict[str, Any], error: str = "") -> JudgementItem:
    """An item from the validated answer, in the canonical shape of :mod:`consilium.judges.answers`."""
    base: dict[str, Any] = {"component": task.component, "criterion": task.criterion, "detail": task.detail}
    if task.reads == "signed":
        return JudgementItem(**base, score=1.0 if parsed["criteria_met"] else 0.0, rationale=parsed["explanation"])
    if task.reads == "match":
        return JudgementItem(**base, score=1.0 if parsed["match"] else 0.0, rationale=parsed["rationale"])
    if task.reads == "decision":
        score = parsed["scores"][task.criterion]
        if task.criterion in parsed["ignored"]:  # a locked dimension: the judge's answer there is not read
            base["detail"] = {**task.detail, "ignored_answer": parsed["ignored"][task.criterion]}
        if score is None:  # salvaged: this dimension stayed invalid, the others are read
            return JudgementItem(**base, score=None, not_evaluable=True, rationale=parsed["rationale"],
                                 reason=f"invalid judge output on this dimension, also under schema-constrained "
                                        f"decoding: {error}")
        return JudgementItem(**base, score=float(score), rationale=parsed["rationale"])
    flags = {k: v for k, v in parsed.items() if isinstance(v, bool)}
    if parsed["score"] == "not_evaluable":
        return JudgementItem(**base, score=None, not_evaluable=True, reason="the judge found it not evaluable",
                             rationale=parsed["rationale"], flags=flags)
    return JudgementItem(**base, score=float(parsed["score"]), rationale=parsed["rationale"], flags=flags)


def _no_reference(rubric: Rubric, tasks: list[_Task], reason: str | None = None) -> list[JudgementItem]:
    return [JudgementItem(component=t.component, criterion=t.criterion, score=None, not_evaluable=True,
                          reason=reason or f"the case has no reference {rubric.reference.replace('_', ' ')}",
                          detail=t.detail)
            for t in tasks]


async def judge_trace(trace: AnyTrace, trace_name: str, rubric: Rubric, setup: JudgeSetup,
                      components: list[str] | None = None) -> Judgement:
    case = Case.model_validate(trace.case)
    texts = component_texts(trace)
    wanted = [c for c in (components or rubric.components) if c in rubric.components]
    answer = turn_reference(trace, case, setup.reference_answer)  # a turn's own reference answer (App. C.1)
    reference = reference_for(rubric, case, answer.text if answer else None)
    recorder = CallRecorder()
    relaxed = for_run(setup.model, recorder, max_repairs=setup.max_repairs)
    strict = for_run(setup.model, recorder, max_repairs=0)
    tasks = _tasks(rubric, case, texts, reference or "", setup, wanted, leading_diagnosis(trace), trace)
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    # Criterion rubrics (AI Consilium) judge against the case; their reference only informs one
    # criterion, so a case without one is still judged. The others compare with the reference.
    if (reference is None and rubric.scoring != "mean") or (rubric.scoring == "signed_criteria" and not tasks):
        items = _no_reference(rubric, tasks, missing_turn_reference(case) if answer is None and
                              isinstance(trace, TurnTrace) and rubric.reference == "answer" else None) or [
            JudgementItem(component=c, criterion="*", score=None, not_evaluable=True,
                          reason=f"the case has no reference {rubric.reference.replace('_', ' ')}")
            for c in wanted if c in texts]
    else:
        items = list(await asyncio.gather(*(_ask(relaxed, strict, t) for t in tasks)))
    if not items:
        # The trace has none of the components asked for (a board rubric on a consilium trace, a failed
        # run): recorded as not evaluable, so the rubric shows in the coverage instead of vanishing.
        items = [JudgementItem(component=c, criterion="*", score=None, not_evaluable=True,
                               reason=f"the {trace.kind} trace has no {c}") for c in wanted]
    return Judgement(
        trace=trace_name, trace_kind=trace.kind, trace_run_id=trace.run_id, case_id=trace.case_id,
        variant=getattr(trace, "format", None) or getattr(trace, "mode", None), rubric=rubric.name,
        rubric_version=rubric.version, rubric_source=rubric.source, judge_model=setup.model.model_id,
        settings=setup.settings, prompt_hash=judge_prompt_hash(rubric), items=items,
        notes=list(judge_slides(rubric, trace, case, setup.model).notes),  # slides a text-only judge was not sent
        aggregates=aggregate(rubric, items, setup.k), overlap=overlap_metrics(case, texts, answer),
        usage=UsageSummary.from_ledger(recorder.ledger), calls=sorted(recorder.calls, key=lambda c: c.index),
        started_at=started_at, wall_s=round(time.perf_counter() - started, 3),
    )
