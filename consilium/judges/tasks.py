"""The judge calls a component needs: what each scores, its request, and the inputs every call of a trace is
built from.

The rubric's scoring kind (:mod:`consilium.judges.kinds`) decides which calls (:func:`judge_tasks`, one builder
per kind); each is built the same way: the rubric as the system message, case, reference and candidate as
tagged, escaped sections (:func:`consilium.judges.prompting.judge_messages`), the kind's task last, at the
judge's settings, tagged ``judge`` with ``component:criterion`` as its role.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from consilium.cases import Case
from consilium.graphs.registry import protocol_of
from consilium.judges.answers import (
    MATCH,
    SIGNED,
    Scope,
    criterion_schema,
    decisions_schema,
    partial_decisions,
)
from consilium.judges.components import ranked_candidates
from consilium.judges.consistency_answer import consistency_schema
from consilium.judges.kinds import ScoringKind
from consilium.judges.otb_layout import consistency_user
from consilium.judges.otb_prompting import consistency_task, frozen_scope_text, otb_messages, otb_system, turn_note
from consilium.judges.prompting import (
    criterion_task,
    decisions_task,
    diagnosis_task,
    judge_messages,
    signed_task,
    turn_inputs,
    whole_case_task,
)
from consilium.judges.rubric import Rubric
from consilium.judges.scope_labels import DIMENSIONS, FrozenScope
from consilium.judges.slides import judge_slides
from consilium.judges.whole_case import fit_whole_case
from consilium.models import CallTag, ChatModel, GenerationSettings, Message, ModelRequest, OutputSchema
from consilium.models.tokens import context_window
from consilium.otb.serialization import conclusion_of, discussion_of
from consilium.traces.schema import TraceBase

__all__ = ["Answer", "JudgeInputs", "JudgeTask", "SharedCall", "judge_tasks"]

#: A validated answer (None: it stayed invalid) and the last validation error.
Answer = tuple[dict[str, Any] | None, str]


class SharedCall:
    """One judge call whose answer several items read: the first to ask makes it, the others await it.
    ``salvage`` reads what it can of an answer that stayed invalid (None: nothing)."""

    def __init__(self, salvage: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        self.salvage = salvage
        self._answer: asyncio.Future[Answer] | None = None
        self._failure_counted = False

    def failure(self) -> int:
        """1 for the first item to report that the call failed, 0 for the others: one failed call is one."""
        counted, self._failure_counted = self._failure_counted, True
        return 0 if counted else 1

    async def answer(self, ask: Callable[[], Awaitable[Answer]]) -> Answer:
        if self._answer is None:
            self._answer = asyncio.ensure_future(ask())
        return await self._answer


@dataclass(frozen=True)
class JudgeTask:
    component: str
    criterion: str
    request: ModelRequest
    detail: dict[str, Any]
    once: SharedCall | None = None  # the one call several items read (the four-decision rubric's)
    unfit: str | None = None  # why the prompt is not sent: it cannot fit the judge's context (whole_case.py)


@dataclass(frozen=True)
class JudgeInputs:
    """What every judge call of one trace is built from: the rubric, the case and its reference, the
    trace, and the judge's model and settings."""

    rubric: Rubric
    case: Case
    case_text: str
    reference: str
    trace: TraceBase | None
    model: ChatModel
    settings: GenerationSettings
    max_repairs: int
    k: int
    scope: Scope | None
    reference_answer: str | None
    leading: str | None = None
    #: The frozen scope the case is judged under (scope_labels.py); None: the judge decides scope.
    frozen: FrozenScope | None = None
    #: A user's own system prompt replacing consilium's for this rubric (``--prompt-file``); None: consilium's.
    system_prompt: str | None = None

    def task(self, component: str, criterion: str, candidate: str, task: str, schema: OutputSchema,
             detail: dict[str, Any], extra: Sequence[tuple[str, str]] = ()) -> JudgeTask:
        """A call on ``candidate``. Model and case text reach the judge only as tagged, escaped sections
        (``extra``: more of them); ``task`` is this project's wording alone, so no model text can pose as
        the judge's instructions."""
        slides = judge_slides(self.rubric, self.trace, self.case, self.model).message_fields()  # App. C.1
        if self.rubric.layout == "otb":  # the authors' layout: the data alone in the user message
            messages = otb_messages(self.rubric, self.case, self.trace, self.reference, component, candidate, task,
                                    slides["images"], slides["captions"], self.system_prompt)
        else:
            messages = judge_messages(self.rubric, self.case_text, self.reference, candidate, task, extra, **slides)
        return self.request(component, criterion, messages, schema, detail)

    def request(self, component: str, criterion: str, messages: tuple[Message, ...], schema: OutputSchema,
                detail: dict[str, Any]) -> JudgeTask:
        request = ModelRequest(messages=messages, settings=self.settings, schema=schema,
                               tag=CallTag(stage="judge", role=f"{component}:{criterion}"))
        return JudgeTask(component, criterion, request, detail)


def _per_criterion(inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
    """One call per criterion of the rubric, answered with a score (or not evaluable) and its flags."""
    rubric, trace = inputs.rubric, inputs.trace
    schema = criterion_schema(rubric)
    criteria = rubric.criteria_for(component)
    extra, note, about = turn_inputs(trace, inputs.case, inputs.reference_answer) if component == "answer" \
        else ((), "", {})
    if rubric.layout == "otb" and note:  # the question and role travel in the layout's own sections
        extra, note = (), turn_note()
    # ai-consilium.txt Table 29 (L260): the whole-case scores are judged on every stage; the record
    # is fitted once, to the longest of their tasks, so the three see the same one.
    whole = {c.id: whole_case_task(rubric, c, component) for c in criteria if c.whole_case}
    stages = protocol_of(trace).whole_case_record(trace) if whole and trace is not None else []
    if stages:
        sections, record = fit_whole_case(
            stages, partial(judge_messages, rubric, inputs.case_text, inputs.reference, text,
                            max(whole.values(), key=len)),
            context_window(inputs.model), inputs.settings.max_tokens, inputs.max_repairs)
        unfit = None if record["fits"] is not False else (
            f"the whole case does not fit the judge's context of {record['context_tokens']} tokens even "
            f"with the earlier stages shortened (about {record['prompt_tokens_estimate']} prompt tokens, "
            f"room for {record['prompt_room']})")
    tasks = []
    for criterion in criteria:
        detail = {"weight": criterion.weight, "whole_case": criterion.whole_case, **about}
        if criterion.id in whole and stages:
            tasks.append(replace(inputs.task(component, criterion.id, text, whole[criterion.id], schema,
                                             {**detail, "whole_case_input": record}, sections), unfit=unfit))
        elif criterion.id in whole and trace is not None:
            # A protocol without a deliberation (the single-specialist baseline) has no record to judge
            # the whole case on: not evaluable, unsent, rather than judged on the answer alone.
            name = protocol_of(trace).name
            tasks.append(replace(inputs.task(component, criterion.id, text, whole[criterion.id], schema, detail),
                                 unfit=f"the {name} trace has no deliberation record (panel, opinions, report "
                                       "versions, review rounds) to judge the whole case on"))
        else:
            tasks.append(inputs.task(component, criterion.id, text,
                                     note + criterion_task(rubric, criterion, component), schema, detail, extra))
    return tasks


def _decisions(inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
    """The four-decision rubric: one call, one schema for the four scores (opentumorboard.txt App. C.3 L186),
    one item per dimension, in the scope protocol the case allows (App. E.2 L194)."""
    rubric = inputs.rubric
    scope: Scope = "frozen" if inputs.frozen is not None else "judge"
    locked = inputs.frozen.locked if inputs.frozen is not None else frozenset()
    own = frozen_scope_text(locked, [c.id for c in rubric.criteria]) if scope == "frozen" and \
        rubric.layout == "otb" else None  # in scope 0-5, as the authors' reward code scores it
    call = inputs.task(component, "decisions", text, decisions_task(rubric, component, scope, locked, own),
                       decisions_schema(rubric, locked, scope == "frozen"), {})
    once = SharedCall(partial_decisions(rubric, locked, scope == "frozen"))
    return [replace(call, criterion=c.id, once=once, detail={
        "weight": c.weight, "scope": scope, "locked": c.id in locked}) for c in rubric.criteria_for(component)]


def _signed(inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
    """NPCBench: one call per criterion of the case's own rubric."""
    case = inputs.case
    # The criterion is case text: it goes in its own data section, never in the task.
    return [inputs.task(component, crit.id, text, signed_task(component, crit.kind, crit.weight), SIGNED,
                        {"kind": crit.kind, "weight": crit.weight}, (("criterion", crit.text),))
            for crit in (case.reference.rubric if case.reference else [])]


def _diagnosis(inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
    """Neural-MedBench: one call per candidate diagnosis."""
    rubric = inputs.rubric
    if component != "differential":
        return [inputs.task(component, "final_conclusion", text, diagnosis_task(rubric), MATCH,
                            {"rank": 1, "candidate": text})]
    # pass@1 is the leading diagnosis, pass@k adds the differential (neural-medbench.txt L249, L403).
    return [inputs.task(component, f"rank_{rank}", item, diagnosis_task(rubric, rank, source == "final_opinion"),
                        MATCH, {"rank": rank, "candidate": item, "source": source})
            for rank, (source, item) in enumerate(ranked_candidates(inputs.leading, text, inputs.k), 1)]


def _consistency(inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
    """The authors' consistency judge: one call on the board's own discussion and conclusion (its transcript, read
    as their reward code reads it) under the frozen scope, one item per score (training/verl_otb/reward.py)."""
    rubric, frozen = inputs.rubric, inputs.frozen
    assert frozen is not None, "the consistency judge is asked under a frozen scope only"
    transcript = str(getattr(inputs.trace, "transcript", "") or "")
    discussion, conclusion = discussion_of(transcript), conclusion_of(transcript)
    reference_discussion = inputs.case.metadata.get("reference_discussion")
    user = consistency_user(inputs.case, {name: frozen.labels[name] for name in DIMENSIONS},
                            reference_discussion if isinstance(reference_discussion, str) else "",
                            inputs.reference, discussion or "", conclusion or "")
    system = inputs.system_prompt if inputs.system_prompt is not None else \
        otb_system(rubric, consistency_task(rubric, frozen.locked), "consistency")
    call = inputs.request(component, "consistency", (Message(role="system", content=system),
                                                     Message(role="user", content=user)),
                          consistency_schema(rubric, frozen.locked), {})
    once = SharedCall()
    unfit = None if discussion is not None and conclusion is not None else (
        "the consistency judge reads a board's discussion and conclusion, and this trace has "
        f"{'no transcript' if not transcript else 'not exactly one of each block'}")
    return [replace(call, criterion=c.id, once=once, unfit=unfit, detail={
        "scope": "frozen", "locked": c.id in frozen.locked, "decision": c.id in DIMENSIONS})
        for c in rubric.criteria]


#: Each scoring kind's calls, by its name (kinds.py).
_BUILDERS: dict[str, Callable[[JudgeInputs, str, str], list[JudgeTask]]] = {
    "mean": _per_criterion, "single": _per_criterion, "weighted_decisions": _decisions, "signed_criteria": _signed,
    "diagnosis_match": _diagnosis, "consistency": _consistency}


def judge_tasks(kind: ScoringKind, inputs: JudgeInputs, component: str, text: str) -> list[JudgeTask]:
    """The calls a component's ``text`` needs, as the rubric's scoring ``kind`` makes them."""
    return _BUILDERS[kind.name](inputs, component, text)
