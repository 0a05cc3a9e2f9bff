"""The browse pages (administrator only: they name models, formats and judge scores, which a rater must not see).

``/``: the served run folders (one: straight to it; a folder of cohorts: each of them); ``/runs/{n}/``: the
cohort index, filtered and sorted by its query string (browse.js does the same at once in the page, and follows
``/runs/{n}/events`` while the cohort runs); ``/runs/{n}/summary``: the report's figures per model × format;
``/runs/{n}/arm/{id}`` and ``/runs/{n}/case/{case}``: an arm, and a case's variants side by side. Folders are read
only through :class:`~consilium.runfolder.folder.RunFolder`, off the event loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp import web

from consilium.errors import UserError
from consilium.runfolder import RunFolder
from consilium.web.browse_arm import arm_body
from consilium.web.browse_case import case_body
from consilium.web.browse_events import stream
from consilium.web.browse_index import index_body
from consilium.web.browse_query import Query
from consilium.web.browse_rows import Arm, cached_arms, completeness, rubrics_of
from consilium.web.browse_summary import summary_body
from consilium.web.context import CONTEXT
from consilium.web.page import esc, page
from consilium.web.security import require_admin, who

__all__ = ["register"]

SCRIPTS = ("browse.js",)


def _served(request: web.Request) -> tuple[int, RunFolder]:
    """The folder a path names by its place in :meth:`Context.folders` (``/runs/0/``), else 404."""
    n, path = request.app[CONTEXT].folder(request.match_info.get("run", ""))
    return n, RunFolder(path)


async def _arms(folder: RunFolder) -> list[Arm]:
    try:
        return await asyncio.to_thread(cached_arms, folder)
    except UserError as exc:
        raise web.HTTPInternalServerError(text=f"500: {exc}") from None


async def home(request: web.Request) -> web.StreamResponse:
    found = who(request)
    if found.kind == "rater" and found.rater:
        raise web.HTTPSeeOther(f"/rate/{found.rater}")
    require_admin(request)
    runs = request.app[CONTEXT].folders()
    if len(runs) == 1:
        raise web.HTTPSeeOther("/runs/0/")
    items = "".join(f'<li><a href="/runs/{n}/">{esc(path.name)}</a> <span class="muted">{esc(path)}</span></li>'
                    for n, path in enumerate(runs))
    return page(request, "consilium serve", f'<h1>Run folders</h1><nav><a href="/seats">seated runs</a></nav>'
                                            f"<ul>{items}</ul>")


async def index(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    run, folder = _served(request)
    arms = await _arms(folder)
    rubrics = rubrics_of(arms)
    query = Query.parse(request.query, rubrics)
    done = await asyncio.to_thread(completeness, folder, arms)
    body = index_body(run, folder.path.name, arms, query.apply(arms, rubrics), rubrics, query, done, len(arms),
                      _study_links(request, run, folder.path))
    return page(request, f"{folder.path.name}: arms", body, scripts=SCRIPTS)


def _study_links(request: web.Request, run: int, path: Path) -> tuple[str, str]:
    """The index's links to the folder's rating study and to the seated runs, and why its study could not be
    opened where it has one that could not be (in red: never passed off as a folder without a study)."""
    context = request.app[CONTEXT]
    study = context.study(path)
    links = (f'<a href="/study/{run}">rating study</a>' if study is not None
             else f'<a href="/runs/{run}/study/new">new rating study</a>' if RunFolder(path).is_cohort else "")
    links += '<a href="/seats">seated runs</a>'
    problem = context.problems.get(path)
    return links, (f'<p class="error">rating study: {esc(problem)}</p>' if problem else "")


async def summary(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    run, folder = _served(request)
    if not folder.is_cohort:
        body = (f"<h1>Summary: {esc(folder.path.name)}</h1><p class=\"muted\">Not a cohort (no arms.csv): "
                f"<a href=\"/runs/{run}/\">its traces</a>.</p>")
        return page(request, "summary", body)
    try:
        body = await asyncio.to_thread(summary_body, run, folder.path)
    except UserError as exc:
        body = f"<h1>Summary: {esc(folder.path.name)}</h1><p class=\"error\">{esc(exc)}</p>"
    return page(request, f"{folder.path.name}: summary", body)


async def arm(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    run, folder = _served(request)
    wanted = request.match_info["arm"]
    found = next((a for a in await _arms(folder) if a.id == wanted), None)
    if found is None:
        raise web.HTTPNotFound(text=f"404: no arm {wanted!r} in this run folder")
    body = await asyncio.to_thread(arm_body, run, folder, found)
    return page(request, f"{found.row.case_id} · {found.row.format} · {found.model}", body)


async def case(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    run, folder = _served(request)
    case_id = request.match_info["case"]
    arms = await _arms(folder)
    mine = [a for a in arms if a.row.case_id == case_id]
    if not mine:
        raise web.HTTPNotFound(text=f"404: no arm of case {case_id!r} in this run folder")
    body = await asyncio.to_thread(case_body, run, folder, case_id, mine, rubrics_of(arms))
    return page(request, f"Case {case_id}", body)


async def events(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    run, folder = _served(request)
    return await stream(request, run, Path(folder.path))


async def _to_index(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    raise web.HTTPSeeOther(f"/runs/{request.match_info['run']}/")


def register(app: web.Application) -> None:
    app.router.add_get("/", home)
    app.router.add_get("/runs/{run}", _to_index)
    app.router.add_get("/runs/{run}/", index)
    app.router.add_get("/runs/{run}/summary", summary)
    app.router.add_get("/runs/{run}/events", events)
    app.router.add_get("/runs/{run}/arm/{arm}", arm)
    app.router.add_get("/runs/{run}/case/{case}", case)
