"""Keeping secrets out of everything consilium prints or stores.

Two kinds of secret are known: API keys (whatever the environment or a model config hands to a
backend, registered here as they are read) and the ``user:password@`` part of a URL. :func:`redact`
removes both from a text. It is applied at the choke points every byte passes through on its way
out — the terminal streams (:class:`RedactingStream`, installed by the CLI), the log processors
(consilium/log.py) and the atomic file writer (consilium/fileio.py, so every trace, manifest,
judgement, CSV and report) — rather than at each place a message is made, so a new message cannot
forget it (docs/reliability.md, "Secrets").
"""

from __future__ import annotations

import os
import re
import threading
import traceback
from typing import Any, TextIO

__all__ = ["MASK", "RedactingStream", "redact", "redact_exception", "redact_url", "redact_value", "register_secret"]

MASK = "***"

#: Keys shorter than this are not treated as secrets (they would mask ordinary words).
MIN_SECRET_LENGTH = 8

#: The environment variables that hold keys consilium may send.
KEY_VARIABLES = ("OPENAI_API_KEY",)

# Everything up to the authority's *last* "@" is userinfo (as urlsplit reads it), so a password that
# holds an "@" is masked whole.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s\"'<>]*)@")
#: A URL query's value under a key that looks secret (``?api_key=…``, ``&token=…``, ``&sig=…``).
_QUERY_SECRET = re.compile(r"(?P<key>[?&](?:[\w.-]*(?:key|token(?!s)|secret|passw|pwd|credential|auth|signature)[\w.-]*"
                           r"|sig|signature))=(?P<value>[^&#\s\"'<>]+)", re.IGNORECASE)
_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def register_secret(value: str | None) -> None:
    """Remember ``value`` (an API key) so that :func:`redact` masks it from now on."""
    global _pattern
    if not value or len(value) < MIN_SECRET_LENGTH:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        # Longest first, so a key that contains another is masked whole.
        _pattern = re.compile("|".join(re.escape(s) for s in sorted(_secrets, key=len, reverse=True)))


def _register_environment() -> None:
    for name in KEY_VARIABLES:
        register_secret(os.environ.get(name))


def redact_url(url: str) -> str:
    """``https://user:pw@host/v1?api_key=k`` → ``https://***@host/v1?api_key=***``: the userinfo and the
    value of every query key that looks secret masked; a URL without credentials is unchanged."""
    url = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{MASK}@", url)
    return _QUERY_SECRET.sub(lambda m: f"{m['key']}={MASK}", url) if "=" in url else url


def redact(text: str) -> str:
    """``text`` with every registered key and every URL's credentials masked."""
    _register_environment()  # a key set after start-up (tests, notebooks) is still caught
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if "@" in text or "=" in text:
        text = redact_url(text)
    return text


def redact_exception(exc: BaseException) -> BaseException:
    """``exc`` for a handler that shows it (a span's event, LangSmith's error): ``exc`` itself when its
    message and traceback (chained causes included) hold no secret, else a copy of the same type with
    the message masked and neither traceback nor cause, which hold the raw text."""
    text = str(exc)
    if redact("".join(traceback.format_exception(exc))) == "".join(traceback.format_exception(exc)):
        return exc
    try:
        return type(exc)(redact(text))
    except Exception:  # a type whose constructor wants more than a message
        return RuntimeError(f"{type(exc).__name__}: {redact(text)}")


def redact_value(value: Any) -> Any:
    """``value`` with :func:`redact` applied to every string inside it (dicts, lists, tuples)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


class RedactingStream:
    """A text stream that masks secrets in everything written through it (stdout, stderr)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(redact(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, …
        return getattr(self.inner, name)
