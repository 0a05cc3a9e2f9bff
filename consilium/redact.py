"""Keeping secrets out of everything consilium prints or stores.

Two kinds of secret are known: API keys (whatever the environment or a model config hands to a
backend, registered here as they are read) and the ``user:password@`` part of a URL. :func:`redact`
removes both from a text. A credential is registered in every form it may come back in: a header value
whole and each of its words (the token of ``Bearer TOKEN``), and a URL's ``user:password@`` as the
``Authorization: Basic …`` header it is sent as, its base64 token in each spelling (URL-safe, unpadded),
the decoded pair and the password (decoded and as written).

Masking is applied at the choke points every byte passes through on its way out — the terminal streams
(:class:`RedactingStream`, installed by the CLI), the log processors (consilium/log.py), the atomic
file writer (consilium/fileio.py, so every trace, manifest, judgement, CSV and report), and the writers
whose format is not text (a cohort's appended tables, an export's rows and Inspect log, a checkpoint, a
span, a figure's texts: :func:`redact_value`, :func:`redact_figure`) — and where text from outside comes
in: every model answer (models/wrappers/masked.py) and every backend error. A secret is told by its value
(registered) or its shape (a URL's credentials), or by its name (:func:`is_secret_name`: one rule for a
query key, a model's parameter, a field shown in a repr). So a new
message cannot forget it (docs/reliability.md, "Secrets"). Text is masked before it is shortened
(:func:`clip`), never after: a cut through a key would leave all of it but the cut-off end unmasked.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import os
import re
import threading
import traceback
from typing import Any, TextIO
from urllib.parse import unquote

__all__ = ["MASK", "RedactingStream", "clip", "holds_key", "is_secret_name", "masked_fields", "redact",
           "redact_exception", "redact_figure", "redact_url", "redact_value", "register_secret",
           "register_url_credentials", "without_secrets"]

MASK = "***"

#: Keys shorter than this are not treated as secrets (they would mask ordinary words).
MIN_SECRET_LENGTH = 8

#: The environment variables that hold keys consilium may send.
KEY_VARIABLES = ("OPENAI_API_KEY",)

# Everything up to the authority's *last* "@" is userinfo (as urlsplit reads it), so a password that
# holds an "@" is masked whole.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s\"'<>]*)@")
#: The words of a name that holds a secret — a field, a parameter, a header, a query key (``api_key``,
#: ``Authorization``, ``x-token``, ``password``): the one rule, for every place that tells a secret by its name.
#: A count of ``…_tokens`` and the name of a token parameter (``token_param``) are no secret.
_SECRET_WORDS = r"key|token(?!s|_param)|secret|passw|pwd|credential|auth|signature"
_SECRET_NAME = re.compile(rf"{_SECRET_WORDS}|^sig$", re.IGNORECASE)
#: A URL query's value under a key that looks secret (``?api_key=…``, ``&token=…``, ``&sig=…``).
_QUERY_SECRET = re.compile(rf"(?P<key>[?&](?:[\w.-]*(?:{_SECRET_WORDS})[\w.-]*|sig))=(?P<value>[^&#\s\"'<>]+)",
                           re.IGNORECASE)
_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def _basic_login(token: str) -> set[str]:
    """The ``user:password`` an HTTP Basic token decodes to, and the password: empty when it is not one."""
    try:
        login = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # not base64, or not text
        return set()
    _, colon, password = login.partition(":")
    return {login, password} if colon else set()


def _spellings(token: str) -> set[str]:
    """A base64 token as it may be written back: standard or URL-safe alphabet, with or without its ``=``
    padding (a JWT, a URL, a log that re-encodes it)."""
    urlsafe = token.replace("+", "-").replace("/", "_")
    return {token, token.rstrip("="), urlsafe, urlsafe.rstrip("=")}


def _forms(value: str) -> set[str]:
    """``value`` and what a server may echo of it: each whitespace-separated word (the token of
    ``Bearer TOKEN``), and for ``Basic TOKEN`` the token in each base64 spelling, the decoded
    ``user:password`` and the password."""
    words = value.split()
    forms = {value, *words}
    if len(words) == 2 and words[0].lower() == "basic":
        forms |= _spellings(words[1]) | _basic_login(words[1])
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


def register_secret(value: str | None) -> None:
    """Remember ``value`` (an API key, a credential header's value) so that :func:`redact` masks it from
    now on, in each form a server may echo it in (:func:`_forms`)."""
    global _pattern
    if not value:
        return
    forms = _forms(value)
    with _lock:
        if forms <= _secrets:
            return
        _secrets.update(forms)
        # Longest first, so a key that contains another is masked whole.
        _pattern = re.compile("|".join(re.escape(s) for s in sorted(_secrets, key=len, reverse=True)))


def register_url_credentials(url: str | None) -> None:
    """Register the ``user:password@`` of every URL in ``url`` (several, comma-separated, for a pool) as
    what it is sent as: the header ``Authorization: Basic TOKEN`` (so TOKEN, the pair and the password
    too), and the userinfo and the password as written (percent-encoded)."""
    for match in _URL_CREDENTIALS.finditer(url or ""):
        userinfo = match["userinfo"]
        if MASK in userinfo:  # already masked (a URL read back from a file): nothing to register
            continue
        user, _, password = userinfo.partition(":")  # as urlsplit reads it: the user ends at the first ":"
        login = f"{unquote(user)}:{unquote(password)}".encode()
        register_secret("Basic " + base64.b64encode(login).decode("ascii"))
        register_secret(userinfo)
        register_secret(password)  # as written in the URL (percent-encoded); decoded, it is a Basic form


#: The key variables' values last registered (redact runs often: a value is registered once).
_registered_environment: dict[str, str | None] = {}


def _register_environment() -> None:
    for name in KEY_VARIABLES:
        value = os.environ.get(name)
        if _registered_environment.get(name) != value:
            register_secret(value)
            _registered_environment[name] = value


def redact_url(url: str) -> str:
    """``https://user:pw@host/v1?api_key=k`` → ``https://***@host/v1?api_key=***``: the userinfo and the
    value of every query key that looks secret masked; a URL without credentials is unchanged."""
    # Each pattern only where it can match: scanning every word of a long answer for a scheme costs more
    # than all the registered keys together.
    if "://" in url:
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


def holds_key(text: str) -> bool:
    """Whether ``text`` holds a registered key or credential (not counting URL credentials, which
    :func:`redact` finds by their shape)."""
    _register_environment()
    pattern = _pattern
    return pattern is not None and pattern.search(text) is not None


def clip(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` with its secrets masked, masked *before* the cut: cut
    first, a key that straddles the cut would be left with its start in the clear, too short to match."""
    return redact(text)[:limit]


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
    """``value`` with :func:`redact` applied to every string inside it: dicts, lists, tuples, sets, pydantic
    models and dataclasses (copies, with the same types), at any depth; anything else as it is. A value that
    holds no secret is returned itself."""
    if isinstance(value, str):
        masked = redact(value)
        return value if masked == value else masked
    if isinstance(value, dict):
        pairs = [(k, v, redact_value(k), redact_value(v)) for k, v in value.items()]
        if all(k is k2 and v is v2 for k, v, k2, v2 in pairs):
            return value
        return {k2: v2 for _, _, k2, v2 in pairs}
    if isinstance(value, list | tuple | set | frozenset):
        items = [redact_value(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(*items) if _is_namedtuple(value) else type(value)(items)
    fields = getattr(type(value), "model_fields", None)
    if isinstance(fields, dict) and hasattr(value, "model_copy"):  # a pydantic model (frozen ones too)
        update = {name: redact_value(getattr(value, name)) for name in fields}
        changed = {name: new for name, new in update.items() if new is not getattr(value, name)}
        return value.model_copy(update=changed) if changed else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        update = {f.name: redact_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
        changed = {name: new for name, new in update.items() if new is not getattr(value, name)}
        if not changed:
            return value
        copied = copy.copy(value)  # not rebuilt: its __post_init__ (checks, registrations) is not run again
        for name, new in changed.items():
            object.__setattr__(copied, name, new)
        return copied
    return value


def is_secret_name(name: str) -> bool:
    """Whether ``name`` (a field, a parameter, a header, a query key) names a secret."""
    return _SECRET_NAME.search(name) is not None


def without_secrets(value: Any) -> Any:
    """``value`` without the entries under a secret's name, at any depth of its dicts and lists (what
    identifies a model, with no key in it)."""
    if isinstance(value, dict):
        return {k: without_secrets(v) for k, v in value.items() if not is_secret_name(str(k))}
    if isinstance(value, list | tuple):
        return [without_secrets(v) for v in value]
    return value


def masked_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` as shown (a repr, a summary): a set value under a secret's name as :data:`MASK`, every other
    value with :func:`redact_value` applied."""
    return {name: (MASK if value else value) if is_secret_name(name) else redact_value(value)
            for name, value in fields.items()}


def redact_figure(figure: Any) -> Any:
    """``figure`` (matplotlib's) with :func:`redact` applied to each of its texts — titles, labels, ticks,
    legends, annotations — before it is saved: a figure is a file consilium writes like any other."""
    for artist in figure.findobj(lambda a: callable(getattr(a, "get_text", None)) and
                                 callable(getattr(a, "set_text", None))):
        text = artist.get_text()
        if isinstance(text, str) and text and redact(text) != text:
            artist.set_text(redact(text))
    # Tick labels are made again by their axis's formatter when the figure is drawn: an axis whose labels
    # hold a secret gets its ticks fixed, with the labels masked.
    for axes in figure.axes:
        for axis in (getattr(axes, name, None) for name in ("xaxis", "yaxis", "zaxis")):
            for minor in (False, True):
                if axis is None:
                    continue
                labels = [t.get_text() for t in axis.get_ticklabels(minor=minor)]
                if any(redact(label) != label for label in labels):
                    axis.set_ticks(axis.get_ticklocs(minor=minor), [redact(x) for x in labels], minor=minor)
    return figure


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


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
