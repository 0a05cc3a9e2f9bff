"""A page of the studio: one HTML document, every value escaped, scripts and styles from /static only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from aiohttp import web

from consilium.web.context import CONTEXT
from consilium.web.security import who

__all__ = ["esc", "page", "table"]


def esc(value: object) -> str:
    """A value as HTML text (quotes included: safe in an attribute too); None as an empty string."""
    return "" if value is None else escape(str(value), quote=True)


def page(request: web.Request, title: str, body: str, *, scripts: Sequence[str] = (),
         status: int = 200) -> web.Response:
    """The document: ``body`` is HTML the caller built with :func:`esc`; ``scripts`` are files of /static."""
    found = who(request)
    csrf = request.app[CONTEXT].csrf(found.token) if found.token else ""
    if found.token:  # anyone signed in can sign out here (static/session.js posts it with the CSRF token)
        scripts = (*scripts, "session.js")
        body += '<footer class="session"><button type="button" id="sign-out">Sign out</button></footer>'
    tags = "".join(f'<script src="/static/{esc(name)}" defer></script>' for name in scripts)
    html = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="csrf-token" content="{esc(csrf)}"><link rel="stylesheet" href="/static/style.css">'
            f"{tags}</head><body>{body}</body></html>")
    return web.Response(text=html, content_type="text/html", status=status)


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, attrs: str = "") -> str:
    """A table: ``headers`` are text (escaped here); each row's cells are HTML already (built with esc)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table {attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
