"""The judge runner: one call per (component, criterion), concurrently, at temperature 0.

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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from consilium.cases import Case
from consilium.errors import BudgetExceededError, ModelError, ModelOutputError
from consilium.judges.aggregate import aggregate, overlap_metrics
from consilium.judges.components import component_texts, leading_diagnosis, ranked_candidates
from consilium.judges.prompting import anchors_text, judge_messages, judge_prompt_hash, load_judge_prompt
from consilium.judges.record import Judgement, JudgementItem
from consilium.judges.rubric import Criterion, Rubric
from consilium.models import CallRecorder, CallTag, ChatModel, GenerationSettings, ModelRequest, OutputSchema, for_run
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


@dataclass(frozen=True)
class _Task:
    component: str
    criterion: str
    request: ModelRequest
    detail: dict[str, Any]
    reads: str  # how to read the validated answer: "criterion", "signed" or "match"


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
    scores: list[Any] = list(rubric.scale) + (["not_evaluable"] if rubric.not_evaluable else [])
    properties: dict[str, Any] = {"rationale": {"type": "string", "maxLength": rubric.rationale_max_chars},
                                  "score": {"enum": scores}}
    for flag in rubric.flags:
        properties[flag.id] = {"type": "boolean"}
    return OutputSchema(name=f"{rubric.name}-judgement", json_schema={
        "type": "object", "additionalProperties": False, "required": list(properties), "properties": properties})


_SIGNED = OutputSchema(name="CriterionMet", json_schema={
    "type": "object", "additionalProperties": False, "required": ["explanation", "criteria_met"],
    "properties": {"explanation": {"type": "string", "maxLength": 1000}, "criteria_met": {"type": "boolean"}}})
_MATCH = OutputSchema(name="DiagnosisMatch", json_schema={
    "type": "object", "additionalProperties": False, "required": ["rationale", "match"],
    "properties": {"rationale": {"type": "string", "maxLength": 600}, "match": {"type": "boolean"}}})


def _criterion_task(rubric: Rubric, criterion: Criterion) -> str:
    shape = '{"rationale": "...", "score": ' + " | ".join(str(s) for s in rubric.scale) + \
        (' | "not_evaluable"' if rubric.not_evaluable else "") + \
        "".join(f', "{f.id}": true or false' for f in rubric.flags) + "}"
    flags = "".join(f"\nAlso report {f.id}: {f.definition}" for f in rubric.flags)
    return load_judge_prompt("criterion").format(
        component="{component}", criterion_name=criterion.name, criterion_definition=criterion.definition,
        anchors=anchors_text(rubric, criterion), flags=flags, rationale_max_chars=rubric.rationale_max_chars,
        not_evaluable=(' If the text gives you nothing to judge this criterion on, answer "not_evaluable" as the '
                       "score and say why in the rationale.") if rubric.not_evaluable else "",
        output_shape=shape)


def _tasks(rubric: Rubric, case: Case, texts: dict[str, str], reference: str, setup: JudgeSetup,
           components: list[str], leading: str | None = None) -> list[_Task]:
    """One request per (component, criterion). Model and case text reach the judge only as tagged,
    escaped sections (:func:`judge_messages`); a task is this project's wording alone (issue 15, item 18)."""
    case_text = case.render()
    tasks: list[_Task] = []

    def add(component: str, criterion: str, candidate: str, task: str, schema: OutputSchema, reads: str,
            detail: dict[str, Any], extra: tuple[tuple[str, str], ...] = ()) -> None:
        request = ModelRequest(messages=judge_messages(rubric, case_text, reference, candidate, task, extra),
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
        else:
            schema = _criterion_schema(rubric)
            for criterion in rubric.criteria_for(component):
                add(component, criterion.id, text, _criterion_task(rubric, criterion).replace("{component}", component),
                    schema, "criterion", {"weight": criterion.weight, "whole_case": criterion.whole_case})
    return tasks


async def _ask(relaxed: ChatModel, strict: ChatModel, task: _Task) -> JudgementItem:
    schema = task.request.output_schema
    assert schema is not None
    error = ""
    for model, request in ((relaxed, task.request.model_copy(update={"schema_": schema.unenforced()})),
                           (strict, task.request)):
        try:
            parsed = (await model.generate(request)).parsed
        except ModelOutputError as exc:
            error = _ATTEMPTS.sub("", _unplaced(str(exc)), count=1)
            continue
        return _read(task, parsed)
    return JudgementItem(component=task.component, criterion=task.criterion, score=None, not_evaluable=True,
                         reason=f"invalid judge output, also under schema-constrained decoding: {error}",
                         detail=task.detail)


_PLACE = re.compile(r"^stage \S+ \(role [^,]*, round [^)]*\): ")
_ATTEMPTS = re.compile(r"^invalid \S+ output after \d+ attempts: ")  # the reason says it already


def _unplaced(message: str) -> str:
    """An error message without the call's place (``stage judge (role conclusion:c1, round None): ``):
    the item already names its component and criterion, and reasons that read alike across items
    can be counted together (:mod:`consilium.judges.coverage`)."""
    return _PLACE.sub("", message, count=1)


def _read(task: _Task, parsed: dict[str, Any]) -> JudgementItem:
    base: dict[str, Any] = {"component": task.component, "criterion": task.criterion, "detail": task.detail}
    if task.reads == "signed":
        return JudgementItem(**base, score=1.0 if parsed["criteria_met"] else 0.0, rationale=parsed["explanation"])
    if task.reads == "match":
        return JudgementItem(**base, score=1.0 if parsed["match"] else 0.0, rationale=parsed["rationale"])
    flags = {k: v for k, v in parsed.items() if isinstance(v, bool)}
    if parsed["score"] == "not_evaluable":
        return JudgementItem(**base, score=None, not_evaluable=True, reason="the judge found it not evaluable",
                             rationale=parsed["rationale"], flags=flags)
    return JudgementItem(**base, score=float(parsed["score"]), rationale=parsed["rationale"], flags=flags)


def _no_reference(rubric: Rubric, tasks: list[_Task]) -> list[JudgementItem]:
    return [JudgementItem(component=t.component, criterion=t.criterion, score=None, not_evaluable=True,
                          reason=f"the case has no reference {rubric.reference.replace('_', ' ')}", detail=t.detail)
            for t in tasks]


async def judge_trace(trace: AnyTrace, trace_name: str, rubric: Rubric, setup: JudgeSetup,
                      components: list[str] | None = None) -> Judgement:
    case = Case.model_validate(trace.case)
    texts = component_texts(trace)
    wanted = [c for c in (components or rubric.components) if c in rubric.components]
    reference = reference_for(rubric, case, setup.reference_answer)
    recorder = CallRecorder()
    relaxed = for_run(setup.model, recorder, max_repairs=setup.max_repairs)
    strict = for_run(setup.model, recorder, max_repairs=0)
    tasks = _tasks(rubric, case, texts, reference or "", setup, wanted, leading_diagnosis(trace))
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    # Criterion rubrics (AI Consilium) judge against the case; their reference only informs one
    # criterion, so a case without one is still judged. The others compare with the reference.
    if (reference is None and rubric.scoring != "mean") or (rubric.scoring == "signed_criteria" and not tasks):
        items = _no_reference(rubric, tasks) or [
            JudgementItem(component=c, criterion="*", score=None, not_evaluable=True,
                          reason=f"the case has no reference {rubric.reference.replace('_', ' ')}")
            for c in wanted if c in texts]
    else:
        try:
            items = list(await asyncio.gather(*(_ask(relaxed, strict, t) for t in tasks)))
        except (ModelError, BudgetExceededError) as exc:
            items = [JudgementItem(component=t.component, criterion=t.criterion, score=None, not_evaluable=True,
                                   reason=f"judge call failed: {_unplaced(str(exc))}",
                                   detail=t.detail) for t in tasks]
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
        aggregates=aggregate(rubric, items, setup.k), overlap=overlap_metrics(case, texts),
        usage=UsageSummary.from_ledger(recorder.ledger), calls=sorted(recorder.calls, key=lambda c: c.index),
        started_at=started_at, wall_s=round(time.perf_counter() - started, 3),
    )
