"""An empty or cut-off answer is a model error: retried a bounded number of times, then the stage fails.

Per run, above the recorder, so every attempt is in the trace with what was
sent and why it was not used. An empty answer (``content: null``, a
``tool_calls``-only answer, ``""``) is asked again as it was. A truncated one
(``finish_reason: length``) is asked again **with twice the room** — not
continued: chat servers have no portable way to continue an assistant message,
and a fresh answer with room to finish is one the model wrote whole. After the
last attempt :class:`~consilium.errors.IncompleteAnswerError` (a
``ModelOutputError``) ends the stage; nothing is returned to the caller, and the
cache below never stores such an answer (wrappers/cache.py).

The first attempt's budget is the smaller of the request's ``max_tokens`` and
the model's own limit for the stage (``ChatModel.stage_max_tokens``; the
embedded model has one per stage), so a small model that cannot use the room a
run allows for capable ones does not spend it on its first try.
"""

from __future__ import annotations

from consilium.errors import IncompleteAnswerError
from consilium.log import get_logger
from consilium.models.answers import answer_problem
from consilium.models.protocol import ChatModel
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel

__all__ = ["AnswerCheckModel", "with_max_tokens"]

log = get_logger(__name__)


def with_max_tokens(request: ModelRequest, max_tokens: int) -> ModelRequest:
    return request.model_copy(update={"settings": request.settings.model_copy(update={"max_tokens": max_tokens})})


class AnswerCheckModel(WrapperModel):
    """``retries`` further attempts after an empty, truncated or filtered answer.

    ``accept_truncated`` (``models check``) returns a cut-off answer as it is, for the caller to report.
    """

    def __init__(self, inner: ChatModel, *, retries: int = 2, accept_truncated: bool = False) -> None:
        if retries < 0:
            raise ValueError("retries must not be negative")
        super().__init__(inner)
        self.retries = retries
        self.accept_truncated = accept_truncated
        #: Attempts made again because of an unusable answer (all calls of this wrapper).
        self.retried = 0

    def first_attempt(self, request: ModelRequest) -> ModelRequest:
        limit = self.stage_max_tokens.get(request.tag.stage)
        if limit is not None and limit < request.settings.max_tokens:
            return with_max_tokens(request, limit)
        return request

    async def generate(self, request: ModelRequest) -> ModelResponse:
        attempt = self.first_attempt(request)
        budgets: list[int] = []
        for number in range(1, self.retries + 2):
            budgets.append(attempt.settings.max_tokens)
            response = await self.inner.generate(attempt)
            problem = answer_problem(response)
            if problem is None or (problem[0] == "truncated" and self.accept_truncated):
                return response
            kind, reason = problem
            if number > self.retries:
                break
            tag = attempt.tag
            log.warning("model_answer_retry", stage=tag.stage, role=tag.role, round=tag.round, attempt=number,
                        problem=kind, max_tokens=attempt.settings.max_tokens)
            self.retried += 1
            if kind == "truncated":
                attempt = with_max_tokens(attempt, attempt.settings.max_tokens * 2)
        tag = request.tag
        room = f" (max_tokens {', '.join(map(str, budgets))})" if kind == "truncated" else ""
        raise IncompleteAnswerError(
            f"stage {tag.stage} (role {tag.role}, round {tag.round}): {reason} after {len(budgets)} attempts{room}",
            kind=kind, stage=tag.stage, last_text=response.text)
