"""What makes an answer unusable whatever the stage: nothing in it, or cut off before its end.

One rule, used by the answer-check wrapper (retry, then fail the stage), the
recorder (each attempt's ``error``) and the response cache (never stored, never
served), so an empty or truncated answer can never pass for a result.
"""

from __future__ import annotations

from typing import Literal

from consilium.models.types import ModelResponse

__all__ = ["AnswerProblem", "answer_problem"]

AnswerProblem = Literal["empty", "truncated", "filtered"]


def answer_problem(response: ModelResponse) -> tuple[AnswerProblem, str] | None:
    """``(kind, reason)`` when ``response`` cannot be used, else None.

    * empty: no text, or only whitespace (``content: null``, a ``tool_calls``-only answer, ``""``);
    * truncated: ``finish_reason: length``, the answer stopped at ``max_tokens``;
    * filtered: ``finish_reason: content_filter``, the server withheld part of the answer.
    """
    finish = response.finish_reason
    if not response.text.strip():
        return "empty", f"the answer is empty (finish_reason {finish or 'none'})"
    if finish == "length":
        return "truncated", "the answer was cut off at max_tokens (finish_reason length)"
    if finish == "content_filter":
        return "filtered", "the server's content filter withheld the answer (finish_reason content_filter)"
    return None
