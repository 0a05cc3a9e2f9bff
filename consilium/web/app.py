"""The studio's aiohttp application: the security layer, /static, and each page family's routes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aiohttp import web

from consilium.web import browse, rate, seat, security, study_new
from consilium.web.context import CONTEXT, Context, token_hash

__all__ = ["STATIC", "make_app"]

STATIC = Path(__file__).with_name("static")


def make_app(runs: Sequence[Path], *, admin_token: str, database: str | None = None) -> web.Application:
    """The application over ``runs`` (run or cohort folders); ``admin_token`` opens every page, ``database`` is
    the study database (None: each folder's own ``study.sqlite3``)."""
    app = web.Application(middlewares=[security.middleware])
    app[CONTEXT] = Context([Path(r) for r in runs], database, token_hash(admin_token))
    app.router.add_static("/static/", STATIC, show_index=False, follow_symlinks=False)
    for family in (security, browse, rate, seat, study_new):
        family.register(app)
    return app
