"""The rater's pages: their queue, the rating page, and the answers saved as they are given.

Blinded by construction: every page and JSON body here is built from the study's rater views only
(:class:`~consilium.study.views.QueueEntry`, :class:`~consilium.study.views.ItemView`,
:class:`~consilium.study.views.Answer`), which hold no model, variant, judge score, run id or trace file; an item
is named by its opaque id. A rater's session opens their own queue only (``require_rater``: 403 for another's).
The study's methods are synchronous (sqlite3 / psycopg): each runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from aiohttp import web

from consilium.errors import UserError
from consilium.web import rate_admin
from consilium.web.context import CONTEXT
from consilium.web.page import esc, page
from consilium.web.rate_item import item_body
from consilium.web.security import require_rater, who

if TYPE_CHECKING:
    from consilium.study import Study

__all__ = ["register"]


def _study_of(request: web.Request, rater: str) -> Study:
    """The study whose queue ``/rate/{rater}`` is: the rater's own; for the administrator, the first served study
    that has that rater. 403 for anyone else (``require_rater``), 404 where no study has the rater."""
    found = require_rater(request, rater)
    if found.kind == "rater" and found.study is not None:
        return found.study
    for study in request.app[CONTEXT].studies():
        if rater in study.raters():
            return study
    raise web.HTTPNotFound(text=f"404: no served study has a rater {rater!r}")


async def queue_page(request: web.Request) -> web.Response:
    rater = request.match_info["rater"]
    study = _study_of(request, rater)
    queue = await asyncio.to_thread(study.queue, rater)
    done = sum(e.done for e in queue)
    rows = "".join(
        f'<tr class="{"done" if e.done else "todo"}"><td>{e.position}</td>'
        f'<td><a href="/rate/{esc(rater)}/{esc(e.item)}">Item {e.position}</a></td>'
        f'<td>{"done" if e.done else "not done"}</td></tr>' for e in queue)
    first = next((e for e in queue if not e.done), None)
    start = ("<p>Every item is rated. Thank you.</p>" if first is None else
             f'<p><a class="button" href="/rate/{esc(rater)}/{esc(first.item)}">Continue with item '
             f"{first.position}</a></p>")
    body = (f"<h1>Rating queue of {esc(rater)}</h1>"
            f'<p class="progress">{done} of {len(queue)} done '
            f'<progress max="{len(queue)}" value="{done}"></progress></p>'
            f"{start}<p class=\"muted\">Each item is one text to rate against the criteria shown; the items come in "
            "an order of your own, with no sign of which system wrote them. Answers save as you give them.</p>"
            f'<table class="queue"><thead><tr><th>#</th><th>Item</th><th>Status</th></tr></thead><tbody>{rows}'
            "</tbody></table>")
    return page(request, f"Queue of {rater}", body)


async def item_page(request: web.Request) -> web.Response:
    rater, item = request.match_info["rater"], request.match_info["item"]
    study = _study_of(request, rater)
    try:
        view = await asyncio.to_thread(study.item, rater, item)
    except study.Forbidden as exc:
        raise web.HTTPNotFound(text="404: no such item in your queue") from exc
    queue = await asyncio.to_thread(study.queue, rater)
    return page(request, f"Item {view.position} of {view.total}", item_body(rater, view, queue),
                scripts=("rate.js",))


async def queue_json(request: web.Request) -> web.Response:
    rater = request.match_info["rater"]
    study = _study_of(request, rater)
    queue = await asyncio.to_thread(study.queue, rater)
    return web.json_response({"rater": rater, "done": sum(e.done for e in queue), "total": len(queue),
                              "items": [asdict(e) for e in queue]})


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _parse(body: Any) -> dict[str, Any]:
    """The answer's fields from the request's JSON, checked for type; the study checks the values."""
    if not isinstance(body, dict):
        raise UserError("body: a JSON object with criterion, score, not_evaluable, reason, comment")
    criterion = body.get("criterion")
    if not isinstance(criterion, str) or not criterion:
        raise UserError("criterion: give the criterion's id")
    score = body.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise UserError(f"score: {score!r} is not a number")
    not_evaluable = body.get("not_evaluable", False)
    if not isinstance(not_evaluable, bool):
        raise UserError("not_evaluable: true or false")
    fields: dict[str, Any] = {"criterion": criterion, "score": score, "not_evaluable": not_evaluable}
    for name in ("reason", "comment"):
        value = body.get(name)
        if value is not None and not isinstance(value, str):
            raise UserError(f"{name}: text or null")
        fields[name] = value
    return fields


async def save_answer(request: web.Request) -> web.Response:
    rater, item = request.match_info["rater"], request.match_info["item"]
    study = _study_of(request, rater)
    if who(request).kind != "rater":  # the administrator sees a rater's pages, but the answers are the rater's own
        return _error(403, "only the rater answers: the administrator's session cannot answer in a rater's name")
    try:
        fields = _parse(await request.json(loads=json.loads))
    except (ValueError, UserError) as exc:
        return _error(400, str(exc) if isinstance(exc, UserError) else "body: not JSON")
    criterion = fields.pop("criterion")
    try:
        answer = await asyncio.to_thread(study.answer, rater, item, criterion, **fields)
    except study.Forbidden:
        return _error(403, "this item is not in your queue, or your link was revoked")
    except UserError as exc:
        return _error(400, str(exc))
    queue = await asyncio.to_thread(study.queue, rater)
    done = next((e.done for e in queue if e.item == item), False)
    return web.json_response({"saved": asdict(answer), "item_done": done,
                              "done": sum(e.done for e in queue), "total": len(queue)})


def register(app: web.Application) -> None:
    app.router.add_get("/rate/{rater}", queue_page)
    app.router.add_get("/rate/{rater}/{item}", item_page)
    app.router.add_get("/api/rate/{rater}/queue", queue_json)
    app.router.add_put("/api/rate/{rater}/{item}", save_answer)
    app.router.add_post("/api/rate/{rater}/{item}", save_answer)
    rate_admin.register(app)
