"""One judge call to make: what it scores, the request, and the inputs every call of a trace is built from.

A scoring kind (:mod:`consilium.judges.kinds`) decides which calls a component needs; each is built
here the same way: the rubric as the system message, case, reference and candidate as tagged,
escaped sections (:func:`consilium.judges.prompting.judge_messages`), the kind's task last, at the
judge's settings, tagged ``judge`` with ``component:criterion`` as its role.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from consilium.cases import Case
from consilium.judges.answers import Scope
from consilium.judges.prompting import judge_messages
from consilium.judges.rubric import Rubric
from consilium.judges.slides import judge_slides
from consilium.models import CallTag, ChatModel, GenerationSettings, ModelRequest, OutputSchema
from consilium.traces.schema import TraceBase

__all__ = ["Answer", "JudgeInputs", "JudgeTask", "SharedCall"]

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

    def task(self, component: str, criterion: str, candidate: str, task: str, schema: OutputSchema,
             detail: dict[str, Any], extra: Sequence[tuple[str, str]] = ()) -> JudgeTask:
        """A call on ``candidate``. Model and case text reach the judge only as tagged, escaped sections
        (``extra``: more of them); ``task`` is this project's wording alone, so no model text can pose as
        the judge's instructions."""
        slides = judge_slides(self.rubric, self.trace, self.case, self.model).message_fields()  # App. C.1
        request = ModelRequest(messages=judge_messages(self.rubric, self.case_text, self.reference, candidate, task,
                                                       extra, **slides),
                               settings=self.settings, schema=schema,
                               tag=CallTag(stage="judge", role=f"{component}:{criterion}"))
        return JudgeTask(component, criterion, request, detail)
