"""Making a judge call and turning its outcome into an item.

The judge's decoding order (consilium/judges/decoding.py) gives the models asked in turn. In the paper's
order, invalid judge output goes back to the judge with the validation error a bounded number of times
with the schema described in the prompt only (``relaxed``), then one schema-constrained attempt
(``strict``: grammar or response_format, where the backend has it). In the constrained order there is no
relaxed model: ``strict`` is asked under the schema from the first attempt and repaired a bounded number
of times. Then the item is recorded as not evaluable with the reason. A score is never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from consilium.errors import BudgetExceededError, ModelError, ModelOutputError
from consilium.judges.kinds import ScoringKind
from consilium.judges.parsing import not_evaluable, read_item
from consilium.judges.record import JudgementItem
from consilium.judges.tasks import Answer, JudgeTask
from consilium.models import ChatModel, ModelRequest
from consilium.models.protocol import enforces_schemas

__all__ = ["answer_of", "ask", "how_asked", "unplaced"]

_PLACE = re.compile(r"^stage \S+ \(role [^,]*, round [^)]*\): ")
_ATTEMPTS = re.compile(r"^invalid \S+ output after \d+ attempts: ")  # the reason says it already


def _unplaced(message: str) -> str:
    """An error message without the call's place (``stage judge (role conclusion:c1, round None): ``):
    the item already names its component and criterion, and reasons that read alike across items
    can be counted together (:mod:`consilium.judges.coverage`)."""
    return _PLACE.sub("", message, count=1)


def _how(relaxed: ChatModel | None, strict: ChatModel) -> str:
    """How the last attempt was asked, for an item that stayed invalid: after the relaxed attempts (the paper's
    order) or from the first attempt (the constrained one); under schema-constrained decoding where the backend
    enforces schemas, else with the schema only requested (a reason must not claim a constraint never applied)."""
    when = "also " if relaxed is not None else ""
    if enforces_schemas(strict):
        return f"{when}under schema-constrained decoding" + ("" if when else " from the first attempt")
    return f"{when}with the schema requested" + ("" if when else " from the first attempt") + \
        " (this backend does not enforce it)"


async def answer_of(relaxed: ChatModel | None, strict: ChatModel, request: ModelRequest,
                    salvage: Callable[[str], dict[str, Any] | None] | None = None) -> Answer:
    """The validated answer to ``request`` in the judge's decoding order (None when it stayed invalid, or
    what ``salvage`` reads of it) and the last validation error; a failed call raises."""
    schema = request.output_schema
    assert schema is not None
    error, last_text = "", ""
    attempts = [(strict, request)]
    if relaxed is not None:
        attempts.insert(0, (relaxed, request.model_copy(update={"schema_": schema.unenforced()})))
    for model, asked in attempts:
        try:
            return (await model.generate(asked)).parsed, ""
        except ModelOutputError as exc:
            error, last_text = _ATTEMPTS.sub("", _unplaced(str(exc)), count=1), exc.last_text
    return (salvage(last_text) if salvage else None), error


async def _answer(relaxed: ChatModel | None, strict: ChatModel, task: JudgeTask) -> Answer:
    """The task's answer (what ``task.once`` salvages of one that stayed invalid) and the last error."""
    return await answer_of(relaxed, strict, task.request, task.once.salvage if task.once else None)


def unplaced(message: str) -> str:
    """An error message without the call's place (see :func:`_unplaced`)."""
    return _unplaced(message)


def how_asked(relaxed: ChatModel | None, strict: ChatModel) -> str:
    """How the last attempt was asked (see :func:`_how`)."""
    return _how(relaxed, strict)


async def ask(kind: ScoringKind, relaxed: ChatModel | None, strict: ChatModel, task: JudgeTask) -> JudgementItem:
    """The item of one task: its call made (or awaited, when several items read one call), read by the
    rubric's scoring ``kind`` (parsing.py); ``relaxed`` None: the constrained order (decoding.py)."""
    if task.unfit is not None:
        return not_evaluable(task, task.unfit)
    try:
        if task.once is None:
            parsed, error = await _answer(relaxed, strict, task)
        else:
            parsed, error = await task.once.answer(lambda: _answer(relaxed, strict, task))
    except (ModelError, BudgetExceededError) as exc:
        # One failed call voids its own item only: a long whole-case prompt a server refuses (its
        # context unknown here) must not take the per-output criteria of the trace with it.
        # Counted in the item, not read back from the reason's words; a call several items read, once.
        return not_evaluable(task, f"judge call failed: {_unplaced(str(exc))}",
                             failed_calls=task.once.failure() if task.once is not None else 1)
    if parsed is None:
        return not_evaluable(task, f"invalid judge output, {_how(relaxed, strict)}: {error}", failed_calls=0)
    # A salvaged answer's error (parts of it stayed invalid) says how it was asked, as a lost item's reason does.
    return read_item(kind, task, parsed, f"{_how(relaxed, strict)}: {error}" if error else "").model_copy(
        update={"failed_calls": 0})
