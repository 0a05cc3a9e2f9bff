"""Errors grouped by who must act (STYLE.md 8).

* :class:`UserError` — the person running consilium must fix an input (a case
  file, a flag, a model spec, a missing key). The CLI prints its message on one
  line and exits 2, without a traceback.
* :class:`ModelOutputError` — a model's output stayed invalid after the bounded
  repair retries; it is recorded, never turned into a score.
* :class:`TransientModelError` — a backend failure worth retrying (timeout,
  429, 5xx, dropped connection); raised by backends, consumed by the retry wrapper.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "ConsiliumError",
    "IncompleteAnswerError",
    "ModelError",
    "ModelOutputError",
    "ReplayDivergenceError",
    "TransientModelError",
    "UserError",
]


class ConsiliumError(Exception):
    """Base class of every error consilium raises on purpose."""


class UserError(ConsiliumError):
    """A mistake the user must correct: bad input file, flag, spec or environment."""


class ModelError(ConsiliumError):
    """A model backend failed in a way that retrying will not fix."""


class TransientModelError(ModelError):
    """A failure worth retrying: timeout, rate limit, server error, dropped connection.

    ``retry_after`` carries the server's Retry-After hint in seconds, if any.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class ModelOutputError(ModelError):
    """Structured output stayed invalid after the bounded repair retries."""

    def __init__(self, message: str, *, stage: str | None = None, last_text: str = ""):
        super().__init__(message)
        self.stage = stage
        self.last_text = last_text


class IncompleteAnswerError(ModelOutputError):
    """The model's answer stayed empty or cut off (``finish_reason: length``) after its bounded
    retries (consilium/models/wrappers/answers.py); ``kind`` is ``empty``, ``truncated`` or ``filtered``."""

    def __init__(self, message: str, *, kind: str, stage: str | None = None, last_text: str = ""):
        super().__init__(message, stage=stage, last_text=last_text)
        self.kind = kind


class BudgetExceededError(ConsiliumError):
    """A token budget would be exceeded; raised before the call is made."""


class ReplayDivergenceError(ConsiliumError):
    """A replayed run asked for a call that the trace does not hold."""
