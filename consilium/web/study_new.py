"""Create a rating study from the studio (what ``consilium study create`` does, as a form on the folder's pages).

``/runs/{n}/study/new`` (the administrator's): the rubric, the raters, raters per output, a sample with its
seed, the components; posted as JSON with the page's CSRF token, checked by :func:`consilium.study.create_study`
exactly as the command checks its flags (one line naming the field, in red), and answered with each rater's
private link and the study's administrator link, shown this once and stored only hashed.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from aiohttp import web

from consilium.errors import UserError
from consilium.judges.rubric import builtin_rubric_names, load_rubric
from consilium.study import create_study
from consilium.study.draw import rated_components
from consilium.web.context import CONTEXT
from consilium.web.page import esc, page
from consilium.web.security import require_admin

__all__ = ["register"]


def _folder(request: web.Request) -> tuple[int, Any]:
    require_admin(request)
    return request.app[CONTEXT].folder(request.match_info["n"])


def _ratable() -> list[str]:
    """The shipped rubrics a study can rate (criteria of their own: not a diagnosis match or a case's criteria)."""
    found = []
    for name in builtin_rubric_names():
        try:
            rated_components(load_rubric(name), None)
        except UserError:
            continue
        found.append(name)
    return found


def _field(label: str, name: str, control: str, hint: str = "") -> str:
    more = f' <span class="muted">{esc(hint)}</span>' if hint else ""
    return f'<p><label for="{name}">{esc(label)}</label> {control}{more}</p>'


async def form(request: web.Request) -> web.Response:
    n, folder = _folder(request)
    context = request.app[CONTEXT]
    existing = context.study_or_refusal(folder)
    if existing is not None:
        raise web.HTTPSeeOther(f"/study/{n}")
    options = "".join(f'<option value="{esc(name)}"{" selected" if name == "ai-consilium" else ""}>{esc(name)}'
                      "</option>" for name in _ratable())
    body = (f'<nav><a href="/runs/{n}/">cohort index</a></nav>'
            f'<h1>New rating study of {esc(folder.name)}</h1>'
            '<p class="muted">The outputs are drawn from the completed arms (stratified by model and variant when '
            "sampled), each given to K raters, balanced, in a random order per rater. The links are shown once.</p>"
            f'<form id="new-study" data-run="{n}">'
            + _field("Rubric", "rubric", f'<select id="rubric" name="rubric">{options}</select>')
            + _field("Raters", "raters", '<input id="raters" name="raters" required placeholder="ana,ben,cy">',
                     "names separated by commas")
            + _field("Raters per output", "per_output",
                     '<input id="per_output" name="per_output" type="number" min="1" value="1">')
            + _field("Sample", "sample", '<input id="sample" name="sample" type="number" min="1">',
                     "outputs to draw (empty: every output)")
            + _field("Seed", "seed", '<input id="seed" name="seed" type="number" value="0">')
            + _field("Components", "components", '<input id="components" name="components">',
                     "separated by commas (empty: every component the rubric scores with criteria)")
            + '<p><button type="submit">Create the study</button></p></form>'
            '<p id="new-study-status" class="status" role="status"></p>'
            '<div id="new-study-links" class="hidden"><h2>Private links (shown this once)</h2>'
            '<table id="links"><tbody></tbody></table><p><a id="study-page" href="#">The study page</a></p></div>')
    return page(request, f"New rating study of {folder.name}", body, scripts=("study_new.js",))


def _int(data: dict[str, Any], key: str) -> int | None:
    """A number field as the command's flag reads it (empty: not given); a field that is no number is refused
    naming the flag."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return int(value)
    raise UserError(f"--{key.replace('_', '-')}: not a whole number ({value!r})")


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _names(value: Any) -> list[str]:
    return [part.strip() for part in str(value or "").split(",")] if str(value or "").strip() else []


async def create(request: web.Request) -> web.Response:
    n, folder = _folder(request)
    context = request.app[CONTEXT]
    try:
        data = await request.json()
        if not isinstance(data, dict):
            raise UserError("the form: not a JSON object")
        components = _names(data.get("components")) or None
        made = await asyncio.to_thread(
            create_study, folder, rubric=str(data.get("rubric") or ""), raters=_names(data.get("raters")),
            per_output=_or(_int(data, "per_output"), 1), sample=_int(data, "sample"),
            seed=_or(_int(data, "seed"), 0), components=components, database=context.database)
    except UserError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    except ValueError:
        return web.json_response({"error": "the form: not JSON"}, status=400)
    context.forget_studies()
    base = f"{request.scheme}://{request.host}/login/"
    links = {**{rater: base + token for rater, token in made.links.items()}, "administrator": base + made.admin_token}
    return web.json_response({"study": f"/study/{n}", "outputs": made.outputs, "assignments": made.assignments,
                              "notes": made.notes, "links": links})


def register(app: web.Application) -> None:
    app.router.add_get("/runs/{n}/study/new", form)
    app.router.add_post("/runs/{n}/study", create)
