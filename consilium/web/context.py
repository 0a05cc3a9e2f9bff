"""What every page of the studio reads: the run folders it serves, their studies, the server's admin token."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from aiohttp import web

from consilium.errors import UserError
from consilium.redact import redact
from consilium.runfolder import RunFolder
from consilium.study.database import DEFAULT_FILE

if TYPE_CHECKING:
    from consilium.study import Study

__all__ = ["CONTEXT", "WHO", "Context", "Who", "token_hash"]



#: What a session's CSRF token is keyed with (a label: the login token it hashes is the secret).
_CSRF_KEY = b"consilium studio csrf"
#: Seconds before a folder found without a study is looked at again.
_LOOK_AGAIN_S = 5.0


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Context:
    """The served run folders (in the order given), the study database (None: each folder's own), the hash of
    this server's administrator token (random per start)."""

    runs: list[Path]
    database: str | None = None
    admin_hash: str = ""
    _studies: dict[Path, Study | None] = field(default_factory=dict)
    #: Why a folder's study could not be opened, where it has a study database: shown on its pages.
    problems: dict[Path, str] = field(default_factory=dict)
    _looked: dict[Path, float] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def folders(self) -> list[Path]:
        """The folders to browse, numbered as the pages number them (``/runs/{n}/``, ``/study/{n}``): each
        served run folder, and in place of a folder that is no run but holds cohorts (``serve runs/``), each
        cohort in it, as ``consilium report`` reads such a folder."""
        found: list[Path] = []
        for path in self.runs:
            folder = RunFolder(path)
            inner = [] if folder.is_cohort or folder.has_manifest else sorted(
                child for child in path.iterdir() if child.is_dir() and RunFolder(child).is_cohort)
            found += inner or [path]
        return found

    def folder(self, text: str) -> tuple[int, Path]:
        """The folder a path's ``{n}`` names (``0``, ``1``, … as :meth:`folders` numbers them), else 404: only
        plain digits, so ``-1`` is no folder rather than the last one."""
        found = self.folders()
        if not (text.isascii() and text.isdigit()) or int(text) >= len(found):
            raise web.HTTPNotFound(text=f"404: no served run folder {text!r}")
        return int(text), found[int(text)]

    def study(self, run: Path) -> Study | None:
        """The rating study of a browsed folder (None: it has none), opened once. A folder with a study database
        that cannot be opened (a newer schema, a database that does not answer) has its reason in
        :attr:`problems`, which its pages show: it is never passed off as a folder without a study."""
        with self._lock:  # requests identify their sessions on worker threads: one opening at a time
            return self._study(run)

    def _study(self, run: Path) -> Study | None:
        # A folder found without a study is looked at again now and then: `study create` while the server runs.
        again = self._studies.get(run, 0) is None and time.monotonic() - self._looked.get(run, 0.0) > _LOOK_AGAIN_S
        if run not in self._studies or again:
            self._looked[run] = time.monotonic()
            self.problems.pop(run, None)
            from consilium.study import Study

            self._studies[run] = None
            if self.database is None and not (run / DEFAULT_FILE).is_file():
                return None
            try:
                self._studies[run] = Study.open(run, self.database)
            except UserError as exc:
                if self.database is None or "no rating study" not in str(exc):  # a --database not made yet: none
                    self.problems[run] = str(exc)
            except Exception as exc:  # any failure of the database is shown on the pages, never a failed login
                self.problems[run] = f"{type(exc).__name__}: {redact(str(exc))}"
        return self._studies[run]

    def study_or_refusal(self, run: Path) -> Study | None:
        """:meth:`study`, where a study database that cannot be opened is a 503 saying why (never "no study")."""
        found = self.study(run)
        if found is None and run in self.problems:
            raise web.HTTPServiceUnavailable(text=f"503: {self.problems[run]}")
        return found

    def forget_studies(self) -> None:
        """Open each folder's study afresh on next use (one created or changed while the server runs)."""
        with self._lock:
            self._studies.clear()
            self.problems.clear()

    def studies(self) -> list[Study]:
        return [s for s in (self.study(run) for run in self.folders()) if s is not None]

    def is_server_admin(self, token: str) -> bool:
        return bool(self.admin_hash) and hmac.compare_digest(token_hash(token), self.admin_hash)

    def csrf(self, token: str) -> str:
        """The CSRF token of a session: a keyed hash of its login token (random, 256 bits, in an HttpOnly cookie),
        so a page of another origin cannot make it, and the hash does not give the token away. It depends on
        nothing random per start, so a rater's page left open across a restart of the server still saves."""
        return hmac.new(_CSRF_KEY, token.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Who:
    """Who a request comes from: the administrator (every page), a rater of a study (their queue only), or
    nobody (the login page only)."""

    kind: Literal["admin", "rater"] | None = None
    rater: str | None = None
    study: Study | None = None
    token: str = ""


CONTEXT = web.AppKey("consilium_context", Context)
WHO = web.RequestKey("consilium_who", Who)
