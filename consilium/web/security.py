"""Who may see what, once for every page: sessions from login links, CSRF on every write, strict headers.

A login link (``/login/<token>``: in the path, so the terminal that prints it does not mask it as a secret
query value; the access log masks it instead) sets an HttpOnly, SameSite=Strict cookie and redirects: the server's
administrator token (random per start, printed once by ``serve``) or a study's admin token opens every page; a
rater's token opens that rater's queue only. Every write (any method but GET/HEAD) must carry the page's CSRF
token in ``X-CSRF-Token`` and, when the browser sends one, an ``Origin`` of this server. Every response carries
a strict Content Security Policy (no inline script or style), and the access log names the path only: a token
in a query string never reaches a log.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable
from html import escape

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from consilium.errors import ConsiliumError
from consilium.web.context import CONTEXT, WHO, Who

__all__ = ["COOKIE", "CSP", "AccessLogger", "cookie_name", "middleware", "register", "require_admin", "require_rater",
           "who"]

COOKIE = "consilium_session"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY", "Cross-Origin-Opener-Policy": "same-origin"}
_SAFE = ("GET", "HEAD")
#: Paths a session that opens nothing any more may still ask for: the pages' own files, and a new link.
_OPEN = ("/static/", "/login/", "/signed-out")
STALE = ("403: your link no longer opens the studio (revoked by the study's administrator, or an administrator link "
         "of an earlier start): ask for a new link")
UNREAD = "503: the rating study's database cannot be read just now: try again in a moment"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_GO_ON = ('<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; '
          'url={target}"><title>Signed in</title><link rel="stylesheet" href="/static/style.css"></head><body>'
          '<p>Signed in. <a href="{target}">Continue</a></p></body></html>')


def identify(request: web.Request, token: str) -> Who:
    """Who holds ``token``: the server's or a study's administrator, a study's rater, or nobody."""
    context = request.app[CONTEXT]
    if not token:
        return Who()
    if context.is_server_admin(token):
        return Who("admin", token=token)
    for study in context.studies():
        if study.is_admin(token):
            return Who("admin", study=study, token=token)
        rater = study.rater_of(token)
        if rater is not None:
            return Who("rater", rater=rater, study=study, token=token)
    return Who()


def cookie_name(request: web.Request) -> str:
    """The session cookie's name, ``consilium_session_<port>``: a browser keeps one set of cookies per host
    whatever the port, so two studios on one machine would otherwise sign each other's sessions out."""
    return f"{COOKIE}_{request.url.port}"


async def _identify(request: web.Request, token: str) -> Who:
    """:func:`identify` on a worker thread (a study database's lookups never hold up the server's other
    requests), where a study database that does not answer is a 503 naming nothing (a rater's browser is never
    shown a path: it could hold the run's id)."""
    try:
        return await asyncio.to_thread(identify, request, token)
    except ConsiliumError:
        raise web.HTTPServiceUnavailable(text=UNREAD) from None


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    held = request.cookies.get(cookie_name(request), "")
    request[WHO] = who_is = Who()
    try:  # a refusal below is a response like any other: it carries the same headers
        if not request.path.startswith("/static/"):  # the pages' own files are for anyone
            request[WHO] = who_is = await _identify(request, held)
        if held and who_is.kind is None and not request.path.startswith(_OPEN):
            # A session whose link was revoked (or an administrator's link of an earlier start): said as it is,
            # on the next request, page or write, rather than as a missing CSRF token or another rater's queue.
            raise web.HTTPForbidden(text=STALE)
        if request.method not in _SAFE:
            _check_write(request, who_is)
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
    response.headers.update(_HEADERS)
    if not request.path.startswith("/static/"):
        response.headers.setdefault("Cache-Control", "no-store")
    if isinstance(response, web.HTTPException):
        if response.status >= 400 and response.text is None:
            response.text = f"{response.status}: {response.reason}"
        raise response
    return response


def _check_write(request: web.Request, who_is: Who) -> None:
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        raise web.HTTPForbidden(text="403: a write from another origin")
    given = request.headers.get("X-CSRF-Token", "")
    expected = request.app[CONTEXT].csrf(who_is.token) if who_is.token else ""
    if not expected or not hmac.compare_digest(given, expected):
        raise web.HTTPForbidden(text="403: missing or wrong CSRF token (reload the page)")


def who(request: web.Request) -> Who:
    found: Who = request[WHO]
    return found


def require_admin(request: web.Request) -> Who:
    """The administrator's session, else 403 (a rater never sees a browse page: it would unblind them)."""
    found = who(request)
    if found.kind != "admin":
        raise web.HTTPForbidden(text="403: this page needs the administrator's link (printed by `consilium serve`)")
    return found


def require_rater(request: web.Request, rater: str) -> Who:
    """That rater's own session (or the administrator's), else 403: no rater reads another's queue."""
    found = who(request)
    if found.kind == "admin" or (found.kind == "rater" and found.rater == rater):
        return found
    raise web.HTTPForbidden(text="403: not your queue")


async def login(request: web.Request) -> web.StreamResponse:
    token = request.match_info.get("token", "")
    found = await _identify(request, token)
    if found.kind is None:
        raise web.HTTPForbidden(text="403: this link is not valid (mistyped, or revoked by the study's administrator)")
    target = f"/rate/{found.rater}" if found.kind == "rater" else "/"
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        # A link followed from another site (a webmail, say): the browser does not send a SameSite=Strict cookie
        # on a redirect of that navigation, so this site's own page goes on to the target (a refresh, no script).
        response = web.Response(text=_GO_ON.format(target=escape(target)), content_type="text/html")
        response.set_cookie(cookie_name(request), token, httponly=True, samesite="Strict", path="/")
        return response
    redirect = web.HTTPSeeOther(target)
    redirect.set_cookie(cookie_name(request), token, httponly=True, samesite="Strict", path="/")
    raise redirect


async def logout(request: web.Request) -> web.StreamResponse:
    """The session ended here (the page's sign-out button): its cookie deleted; the link still opens it again."""
    response = web.json_response({"signed_out": True})
    response.del_cookie(cookie_name(request), path="/")
    return response


async def signed_out(request: web.Request) -> web.StreamResponse:
    return web.Response(text='<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Signed out</title>'
                             '<link rel="stylesheet" href="/static/style.css"></head><body><p>Signed out. Your link '
                             "opens the studio again.</p></body></html>", content_type="text/html")


def register(app: web.Application) -> None:
    app.router.add_get("/login/{token}", login)
    app.router.add_get("/login", login)
    app.router.add_get("/signed-out", signed_out)
    app.router.add_post("/logout", logout)


class AccessLogger(AbstractAccessLogger):
    """One line per request: method, path (never the query: a login token sits there), status, time."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        path = "/login/…" if request.path.startswith("/login/") else request.path
        self.logger.info("%s %s %s %.1f ms", request.method, path, response.status, time * 1000)
