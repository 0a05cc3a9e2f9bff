"""What every page of the studio reads: the run folders it serves, their studies, the server's admin token."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from aiohttp import web

if TYPE_CHECKING:
    from consilium.study import Study

__all__ = ["CONTEXT", "WHO", "Context", "Who", "token_hash"]


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Context:
    """The served run folders (in the order given), the study database (None: each folder's own), the hash of
    this server's administrator token (random per start) and the key CSRF tokens are derived with."""

    runs: list[Path]
    database: str | None = None
    admin_hash: str = ""
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _studies: dict[Path, Study | None] = field(default_factory=dict)

    def study(self, run: Path) -> Study | None:
        """The rating study of a served folder (None: it has none), opened once."""
        if run not in self._studies:
            try:
                from consilium.study import Study

                self._studies[run] = Study.open(run, self.database)
            except Exception:  # noqa: BLE001 — a folder without a study (or an unreadable one) is browsed alone
                self._studies[run] = None
        return self._studies[run]

    def forget_studies(self) -> None:
        """Open each folder's study afresh on next use (a study created while the server runs)."""
        self._studies.clear()

    def studies(self) -> list[Study]:
        return [s for s in (self.study(run) for run in self.runs) if s is not None]

    def is_server_admin(self, token: str) -> bool:
        return bool(self.admin_hash) and hmac.compare_digest(token_hash(token), self.admin_hash)

    def csrf(self, token: str) -> str:
        """The CSRF token of a session: keyed by the server's secret, so a page of another origin cannot make it."""
        return hmac.new(self.secret, token.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Who:
    """Who a request comes from: the administrator (every page), a rater of a study (their queue only), or
    nobody (the login page only)."""

    kind: Literal["admin", "rater"] | None = None
    rater: str | None = None
    study: Study | None = None
    token: str = ""


CONTEXT = web.AppKey("consilium_context", Context)
WHO = "consilium_who"
