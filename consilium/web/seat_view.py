"""The seat's HTML: what the terminal shows for each prompt (cli/human_prompt.py: the case and the member's brief;
the length budget or the sections' caps for an opinion; the report under review for a vote) with the form that
answers it, and a finished run's outcome. Every value escaped; no inline script or style (seat.js, style.css).
"""

from __future__ import annotations

from collections.abc import Sequence

from consilium.agents.schemas import OPINION_SECTIONS
from consilium.graphs.consilium.seat import HumanPrompt
from consilium.graphs.consilium.trace import Trace
from consilium.web.page import esc

__all__ = ["outcome_html", "prompt_html", "what"]


def what(prompt: HumanPrompt) -> str:
    """The prompt in a few words, as the terminal's turn line and the seats' list say it."""
    if prompt.stage == "opinion":
        return f"{prompt.format} · opinion"
    return f"{prompt.format} · vote, review round {prompt.round} (report version {prompt.report_version})"


def prompt_html(prompt: HumanPrompt, *, note: str | None = None) -> str:
    """The turn: who the person plays, the case, the brief, what is asked, and the form."""
    head = (f'<h2 id="seat-turn">Your turn: {esc(prompt.role_label)} ({esc(prompt.role_kind)}) · '
            f"{esc(what(prompt))}</h2>")
    case = (f'<section class="case"><h3>Case</h3><pre id="seat-case">{esc(prompt.case_text)}</pre>'
            f'<p>Your brief: <span id="seat-brief">{esc(prompt.justification)}</span></p></section>')
    warn = f'<p class="error" id="seat-note">{esc(note)}</p>' if note else ""
    if prompt.stage == "opinion":
        budget = f" (at most {prompt.budget_chars} characters)" if prompt.budget_chars else ""
        ask = (f"<p>Write your independent pre-consilium opinion{esc(budget)}; no member sees another's opinion "
               "before the moderator's synthesis.</p>")
        return head + case + warn + ask + _opinion_form(prompt)
    report = (f'<section class="report"><h3>The moderator\'s shared report, version {esc(prompt.report_version)}'
              f'</h3><pre id="seat-report">{esc(prompt.report_text)}</pre></section>')
    ask = ("<p>Vote accept if you can sign it as it stands, or dissent if something clinically important is wrong "
           "or missing (the members vote at the same time: no one sees another's vote).</p>")
    return head + case + report + warn + ask + _vote_form(prompt)


def _form(prompt: HumanPrompt, kind: str, fields: str) -> str:
    return (f'<form id="seat-form" class="seat" data-kind="{esc(kind)}" data-key="{esc(prompt.key)}">{fields}'
            '<p id="seat-error" class="error hidden" role="alert"></p>'
            '<p><button type="submit" id="seat-submit">Send the answer</button> '
            '<span id="seat-sending" class="muted hidden">sent; the run goes on…</span></p></form>')


def _opinion_form(prompt: HumanPrompt) -> str:
    if prompt.format == "free-form":
        field = ('<label class="seat-text">opinion<textarea name="opinion" id="seat-opinion" rows="14" '
                 f'data-budget="{esc(prompt.budget_chars or "")}"></textarea></label>'
                 '<p class="muted"><span class="seat-count" data-for="seat-opinion">0</span> characters</p>')
        return _form(prompt, "opinion-free-form", field)
    fields = ""
    for name in OPINION_SECTIONS:
        cap = (prompt.sections or {}).get(name)
        room = f" (at most {cap} characters)" if cap else ""
        fields += (f'<label class="seat-text">{esc(name.replace("_", " "))}{esc(room)}'
                   f'<textarea name="{esc(name)}" id="seat-{esc(name)}" rows="4"></textarea></label>')
    return _form(prompt, "opinion-structured", fields)


def _vote_form(prompt: HumanPrompt) -> str:
    fields = ('<fieldset class="seat-vote"><legend>vote</legend>'
              '<label class="choice"><input type="radio" name="vote" value="accept" id="seat-accept"> accept</label>'
              '<label class="choice"><input type="radio" name="vote" value="dissent" id="seat-dissent"> dissent'
              '</label></fieldset>'
              '<label class="seat-line">reason (at most 400 characters)<input type="text" name="reason" '
              'id="seat-reason"></label>'
              '<label class="seat-text">requested change (on a dissent; blank for none)'
              '<textarea name="requested_change" id="seat-change" rows="3"></textarea></label>')
    return _form(prompt, "vote", fields)


def outcome_html(traces: Sequence[Trace]) -> str:
    """A finished run: per format, how it ended, the person's answers, and the final report."""
    parts = []
    for trace in traces:
        answers = len(trace.human.inputs) if trace.human is not None else 0
        sources = sorted({i.source for i in trace.human.inputs}) if trace.human is not None else []
        final = trace.final_report.text if trace.final_report is not None else ""
        error = f'<p class="error">{esc(trace.error)}</p>' if trace.error else ""
        parts.append(f'<section class="seat-outcome"><h3>{esc(trace.format)}: {esc(trace.status)}</h3>{error}'
                     f"<p>{len(trace.rounds)} review round(s); stop: {esc(trace.stop_reason)}; the person gave "
                     f"{answers} answer(s) ({esc(', '.join(sources))})</p>"
                     f'<pre class="seat-final">{esc(final)}</pre></section>')
    return "".join(parts)
