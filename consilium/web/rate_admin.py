"""The administrator's study page: progress per rater, live agreement on what is rated so far, and each rater's
link revoked or issued again.

``/study/{n}`` is the study of the folder the browse pages call ``/runs/{n}/`` (0-based: each served folder in the
order ``serve`` was given them, a folder holding cohorts standing for each of them). The
agreement is :meth:`Study.agreement`'s (inter-rater percent, weighted κ, Krippendorff α; judge–physician
percent and κ); ``admin.js`` polls ``/api/study/{n}/agreement`` every few seconds, so the figures move as
raters answer. A new link is returned once, in the reply to the administrator's POST, and stored hashed only.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from aiohttp import web

from consilium.errors import UserError
from consilium.web.context import CONTEXT
from consilium.web.page import esc, page
from consilium.web.security import require_admin

if TYPE_CHECKING:
    from consilium.study import Study
    from consilium.study.views import LiveAgreement, RaterProgress

__all__ = ["FIGURES", "register", "shown"]

#: The agreement figures the page shows, in order: (key of :class:`LiveAgreement`, label).
FIGURES = (("items", "Units rated by two or more raters (output × criterion)"),
           ("percent", "Inter-rater percent agreement"),
           ("kappa", "Inter-rater weighted Cohen's κ"),
           ("alpha", "Inter-rater Krippendorff's α"),
           ("judge_pairs", "Judge–physician pairs"),
           ("judge_percent", "Judge–physician percent agreement"),
           ("judge_kappa", "Judge–physician Cohen's κ"),
           ("not_evaluable", "Answers marked not evaluable"))


def _figure(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key in ("percent", "judge_percent"):
        return f"{100 * float(value):.1f} %"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def shown(agreement: LiveAgreement) -> dict[str, str]:
    """Each figure as the page prints it (one formatting, for the first render and every poll): a share as a
    percentage with one decimal, κ and α with three, a count as it is, an undefined figure as a dash."""
    values = asdict(agreement)
    return {key: _figure(key, values.get(key)) for key, _ in FIGURES}


def _study(request: web.Request) -> tuple[int, Study]:
    require_admin(request)
    context = request.app[CONTEXT]
    n, run = context.folder(request.match_info["n"])  # numbered as the browse pages number them (/runs/{n}/)
    study = context.study(run)
    if study is None:  # perhaps created since the server started
        context.forget_studies()
        study = context.study_or_refusal(run)
    if study is None:
        raise web.HTTPNotFound(text=f"404: {run} has no rating study (create one with `consilium study create`)")
    return n, study


def _progress_rows(progress: list[RaterProgress]) -> str:
    rows = []
    for p in progress:
        state = "revoked" if p.revoked else "live"
        rows.append(
            f'<tr data-rater="{esc(p.rater)}"><td>{esc(p.rater)}</td><td class="assigned">{p.assigned}</td>'
            f'<td class="done">{p.done}</td><td><progress max="{p.assigned}" value="{p.done}"></progress></td>'
            f'<td class="link-state{" failed" if p.revoked else ""}">{state}</td>'
            f'<td><button type="button" class="revoke" data-rater="{esc(p.rater)}">Revoke link</button> '
            f'<button type="button" class="new-link" data-rater="{esc(p.rater)}">New link</button></td></tr>')
    return "".join(rows)


async def study_page(request: web.Request) -> web.Response:
    n, study = _study(request)
    progress, agreement = await asyncio.gather(asyncio.to_thread(study.progress), asyncio.to_thread(study.agreement))
    figures = shown(agreement)
    weights = "quadratic weights" if agreement.kappa_weights == "quadratic" else "unweighted (yes/no)"
    table = "".join(f'<tr><th scope="row">{esc(label)}</th><td data-figure="{esc(key)}">{esc(figures[key])}</td></tr>'
                    for key, label in FIGURES)
    body = (f'<nav><a href="/">runs</a></nav><main id="study" data-study="{n}">'
            f"<h1>Rating study of {esc(study.run_dir.name)}</h1>"
            f'<p class="muted">Study {esc(study.id)} · rubric {esc(study.rubric.name)} · {study.per_output} '
            f"rater(s) per output</p>"
            "<h2>Progress per rater</h2>"
            '<table id="progress"><thead><tr><th>Rater</th><th>Assigned</th><th>Done</th><th></th><th>Link</th>'
            f"<th></th></tr></thead><tbody>{_progress_rows(progress)}</tbody></table>"
            '<div id="new-link-box" class="hidden"><p>New link for <strong id="new-link-rater"></strong> (shown this '
            'once; send it to the rater privately):</p><pre id="new-link"></pre></div>'
            '<p id="admin-status" class="status" role="status"></p>'
            f"<h2>Agreement on what is rated so far</h2><p class=\"muted\">κ: {esc(weights)}. Updated every few "
            'seconds: <span id="updated">now</span>.</p>'
            f'<table id="agreement"><tbody>{table}</tbody></table></main>')
    return page(request, f"Study of {study.run_dir.name}", body, scripts=("admin.js",))


async def agreement_json(request: web.Request) -> web.Response:
    _, study = _study(request)
    progress, agreement = await asyncio.gather(asyncio.to_thread(study.progress), asyncio.to_thread(study.agreement))
    return web.json_response({"progress": [asdict(p) for p in progress], "agreement": asdict(agreement),
                              "shown": shown(agreement)})


async def revoke(request: web.Request) -> web.Response:
    _, study = _study(request)
    rater = request.match_info["rater"]
    try:
        await asyncio.to_thread(study.revoke, rater)
    except UserError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"rater": rater, "revoked": True})


async def new_link(request: web.Request) -> web.Response:
    _, study = _study(request)
    rater = request.match_info["rater"]
    try:
        token = await asyncio.to_thread(study.new_link, rater)
    except UserError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"rater": rater, "link": f"{request.scheme}://{request.host}/login/{token}"})


def register(app: web.Application) -> None:
    app.router.add_get("/study/{n}", study_page)
    app.router.add_get("/api/study/{n}/agreement", agreement_json)
    app.router.add_post("/api/study/{n}/raters/{rater}/revoke", revoke)
    app.router.add_post("/api/study/{n}/raters/{rater}/link", new_link)
