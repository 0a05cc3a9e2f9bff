"""A physician at the table, in the browser (administrator only): a seated run (``simulate --human``) paused at an
answer its file lacks, or stopped with Ctrl-C, answered from the studio and resumed with the answer.

``/seats``: the seated runs at or under the served folders, each with its seat and what it waits for (read from
its checkpoint); ``/seats/{n}/{run}``: the run's current prompt, as the terminal shows it, with its form. The
first answer (or "continue") starts the resume in this process (:mod:`consilium.web.seat_live`), which holds the
run's lock until the run ends; each next prompt replaces the page (seat.js follows ``?view=state``) until the run
is finished and its traces are written as ``simulate`` writes them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from consilium.cases import Case
from consilium.cohort.seated import SeatedSettings
from consilium.cohort.seated_session import finished, read_session, seated_runs, session_path, waiting
from consilium.errors import UserError
from consilium.graphs.consilium.seat import AnswerInvalid, HumanPrompt, check_answer
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace
from consilium.runfolder.layout import trace_glob
from consilium.web.context import CONTEXT
from consilium.web.page import esc, page, table
from consilium.web.seat_live import Seating, Seats
from consilium.web.seat_view import outcome_html, prompt_html, what
from consilium.web.security import require_admin

__all__ = ["SEATS", "register"]

SEATS = web.AppKey("consilium_seats", Seats)
SCRIPTS = ("seat.js",)


@dataclass(frozen=True)
class Found:
    """A seated run under served folder ``n``: its folder and its place in the URL (``~``: the folder itself)."""

    n: int
    run_dir: Path
    slug: str

    @property
    def url(self) -> str:
        return f"/seats/{self.n}/{self.slug}"


@dataclass
class Standing:
    """A seated run as its folder says: its case and settings, finished or where it waits; or why unreadable."""

    case: Case | None = None
    settings: SeatedSettings | None = None
    done: bool = False
    prompts: list[HumanPrompt] = field(default_factory=list)
    error: str | None = None


def _all(request: web.Request) -> list[Found]:
    found = []
    for n, root in enumerate(request.app[CONTEXT].runs):
        for run_dir in seated_runs(root):
            rel = run_dir.relative_to(root).as_posix()
            found.append(Found(n, run_dir, "~" if rel == "." else rel))
    return found


def _found(request: web.Request) -> Found:
    wanted = (request.match_info["n"], request.match_info["run"])
    for each in _all(request):
        if (str(each.n), each.slug) == wanted:
            return each
    raise web.HTTPNotFound(text="404: no run with a person at the table there")


def _session(run_dir: Path) -> Standing:
    """The run's case and seat from its session alone (its checkpoint is in use by the resume going on)."""
    try:
        args, case = read_session(session_path(run_dir))
        return Standing(case, SeatedSettings.of(args, str(session_path(run_dir))))
    except UserError as exc:
        return Standing(error=str(exc))


async def _standing(run_dir: Path, seating: Seating | None = None) -> Standing:
    """The run as its folder says (its session and checkpoint; the session alone while a resume is going)."""
    if seating is not None and seating.live:
        return _session(run_dir)
    try:
        args, case = read_session(session_path(run_dir))
        settings = SeatedSettings.of(args, str(session_path(run_dir)))
        if finished(run_dir, settings.formats):
            return Standing(case, settings, done=True)
        prompts = await waiting(run_dir, settings.formats)
    except UserError as exc:
        return Standing(error=str(exc))
    except Exception as exc:  # a damaged checkpoint: said on the page, in red
        return Standing(error=f"{run_dir / 'human'}: not a readable checkpoint ({type(exc).__name__}: {exc})")
    return Standing(case, settings, prompts=[p for fmt in settings.formats for p in prompts[fmt]])


def _status(seating: Seating | None, standing: Standing) -> str:
    """What the run waits for, in a few words (HTML)."""
    if seating is not None and seating.state != "failed":
        turn = seating.source.turn
        return {"asking": f"answering in the browser: {esc(what(turn.prompt)) if turn else ''}",
                "working": "the models are working (resumed from the browser)",
                "finished": "finished"}.get(seating.state, "")
    if seating is not None and seating.error:
        return f'<span class="error">{esc(seating.error)}</span>'
    if standing.error:
        return f'<span class="error">{esc(standing.error)}</span>'
    if standing.done:
        return "finished"
    if standing.prompts:
        return "waits for " + "; ".join(esc(what(p)) for p in standing.prompts)
    return "stopped between steps (Ctrl-C): continue it from its page"


async def seats_page(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    seats = request.app[SEATS]
    rows = []
    for each in _all(request):
        seating = seats.of(each.run_dir)
        standing = await _standing(each.run_dir, seating)
        role = standing.settings.human if standing.settings else ""
        formats = ", ".join(standing.settings.formats) if standing.settings else ""
        case = standing.case.id if standing.case else ""
        rows.append([f'<a href="{esc(each.url)}">{esc(each.run_dir.name)}</a>', esc(case), esc(role), esc(formats),
                     _status(seating, standing)])
    body = ("<h1>A physician at the table</h1><p class=\"muted\">Runs with a person at the table (<code>simulate "
            "--human</code>) in the served folders: answer a paused run here and it goes on.</p>"
            + (table(["run", "case", "seat", "formats", "status"], rows, attrs='id="seats"') if rows
               else "<p>No run with a person at the table in the served folders.</p>"))
    return page(request, "A physician at the table", body, scripts=SCRIPTS)


def _traces(run_dir: Path, formats: Sequence[str]) -> list[Trace]:
    paths = [p for fmt in formats for p in sorted(run_dir.glob(trace_glob(fmt)))]
    return [t for t in (read_trace(p) for p in paths) if isinstance(t, Trace)]


def _start_button(label: str) -> str:
    return (f'<p><button type="button" data-action="start" id="seat-start">{esc(label)}</button></p>'
            '<p id="seat-start-error" class="error hidden" role="alert"></p>')


async def _content(found: Found, seating: Seating | None, standing: Standing) -> tuple[str, str, str]:
    """The page's part for the run's state: (HTML, state, turn) — the state and turn seat.js follows."""
    formats = list(standing.settings.formats) if standing.settings else []
    if seating is not None and seating.state == "asking" and seating.source.turn is not None:
        turn = seating.source.turn
        return prompt_html(turn.prompt, note=turn.note), "asking", str(turn.number)
    if seating is not None and seating.state == "working":
        return '<p class="progress" id="seat-working">The models are working on the run…</p>', "working", ""
    if standing.done or (seating is not None and seating.state == "finished"):
        outcome = outcome_html(await asyncio.to_thread(_traces, found.run_dir, formats))
        return (f'<p id="seat-finished" class="progress">The run is finished: its traces are written '
                f'(<code>consilium replay {esc(found.run_dir)}</code> reproduces it; '
                f'<a href="/runs/{found.n}/">browse the served folder</a>).</p>{outcome}'), "finished", ""
    failed = (f'<p class="error" id="seat-failed">{esc(seating.error)}</p>'
              if seating is not None and seating.error else "")
    if standing.error:
        return failed + f'<p class="error">{esc(standing.error)}</p>', "failed", ""
    if standing.prompts:
        more = "".join(f"<li>{esc(what(p))}</li>" for p in standing.prompts[1:])
        then = f'<p class="muted">Then:</p><ul>{more}</ul>' if more else ""
        return failed + prompt_html(standing.prompts[0]) + then, "paused", ""
    return (failed + "<p>The run was stopped between steps (Ctrl-C); continuing it runs the models up to the "
            "person's next turn.</p>" + _start_button("Continue the run")), "paused", ""


async def seat_page(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    found = _found(request)
    seating = request.app[SEATS].of(found.run_dir)
    standing = await _standing(found.run_dir, seating)
    html, state, turn = await _content(found, seating, standing)
    if seating is not None:  # each resume its own: a page follows a new one even to the same state
        turn = f"{seating.number}.{turn}"
    if request.query.get("view") == "state":
        return web.json_response({"state": state, "turn": turn})
    title = standing.case.title if standing.case else found.run_dir.name
    role = standing.settings.human if standing.settings else ""
    body = (f'<nav><a href="/seats">Runs with a person at the table</a></nav><h1>{esc(title)}</h1>'
            f'<p class="muted">{esc(found.run_dir)} · the person plays {esc(role)}</p>'
            f'<div id="seat" data-url="{esc(found.url)}" data-state="{esc(state)}" data-turn="{esc(turn)}">'
            f"{html}</div>")
    return page(request, f"Seat: {title}", body, scripts=SCRIPTS)


async def seat_post(request: web.Request) -> web.StreamResponse:
    """``{"action": "answer", "key": …, "answer": …}`` or ``{"action": "start"}``: 200, or 422 with the reason
    a terminal would give (the run keeps waiting), 409 if the run is not waiting for that answer."""
    require_admin(request)
    found = _found(request)
    try:
        body: Any = await request.json()
    except ValueError:
        return web.json_response({"error": "the answer is not JSON"}, status=400)
    if not isinstance(body, dict) or body.get("action") not in ("answer", "start"):
        return web.json_response({"error": "give action answer or start"}, status=400)
    seats = request.app[SEATS]
    seating = seats.of(found.run_dir)
    if body["action"] == "start":
        seats.start(found.run_dir)
        return web.json_response({"ok": True})
    key, answer = str(body.get("key", "")), body.get("answer")
    try:
        if seating is not None and seating.live:
            seating.source.give(key, answer)
            return web.json_response({"ok": True})
        standing = await _standing(found.run_dir)
        prompt = next((p for p in standing.prompts if p.key == key), None)
        if prompt is None:
            raise LookupError(f"{key}: the run is not waiting for this answer (reload the page)")
        check_answer(prompt, answer)
    except AnswerInvalid as exc:
        return web.json_response({"error": f"not accepted: {exc}; please answer again"}, status=422)
    except LookupError as exc:
        return web.json_response({"error": str(exc)}, status=409)
    seats.start(found.run_dir, {key: answer})
    return web.json_response({"ok": True})


def register(app: web.Application) -> None:
    seats = Seats()
    app[SEATS] = seats
    app.on_cleanup.append(seats.close)
    app.router.add_get("/seats", seats_page)
    app.router.add_get("/seats/{n}/{run:.+}", seat_page)
    app.router.add_post("/seats/{n}/{run:.+}", seat_post)
