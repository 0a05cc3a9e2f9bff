"""The rating page's HTML: the case, the output, and one form per criterion (the scale's points with their
anchors, or yes/no; not evaluable with a reason; a comment), rendered with the rater's stored answers so a
reload shows what was given. Built from :class:`~consilium.study.views.ItemView` alone (blinded)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from consilium.web.page import esc

if TYPE_CHECKING:
    from consilium.study.views import Answer, CriterionView, ItemView, QueueEntry

__all__ = ["item_body", "point"]

#: What the page calls each component of a panel's output (the study's component ids otherwise).
COMPONENT_TITLES = {"conclusion": "The panel's conclusion (final report)",
                    "role_reasoning": "A specialist's reasoning", "role_opinion": "A specialist's opinion"}


def point(value: float) -> str:
    """A scale point as the radio's value and the anchors' key: ``2`` for 2.0, ``0.5`` otherwise."""
    return str(int(value)) if float(value).is_integer() else str(value)


def _choice(name: str, value: str, label: str, anchor: str | None, checked: bool) -> str:
    detail = f'<span class="anchor">{esc(anchor)}</span>' if anchor else ""
    return (f'<label class="choice"><input type="radio" name="{esc(name)}" value="{esc(value)}"'
            f'{" checked" if checked else ""}><span class="point">{esc(label)}</span>{detail}</label>')


def criterion_form(criterion: CriterionView, answer: Answer | None) -> str:
    name = f"score-{criterion.id}"
    anchors = criterion.anchors or {}
    given = None if answer is None or answer.not_evaluable else answer.score
    choices = []
    points = sorted(criterion.scale, reverse=criterion.binary)  # yes first on a yes/no question
    for value in points:
        key = point(value)
        anchor = anchors.get(key)
        if criterion.binary:
            label = "yes" if value == 1 else "no"
            anchor = None if anchor in (None, label) else anchor
        else:
            label = key
        choices.append(_choice(name, key, label, anchor, given is not None and float(given) == float(value)))
    not_evaluable = answer is not None and answer.not_evaluable
    choices.append(_choice(name, "ne", "not evaluable", "the text does not let me judge this (say why)",
                           not_evaluable))
    reason = answer.reason if answer is not None and answer.reason else ""
    comment = answer.comment if answer is not None and answer.comment else ""
    state = "answered" if answer is not None else "unanswered"
    return (f'<fieldset class="criterion {state}" data-criterion="{esc(criterion.id)}">'
            f"<legend>{esc(criterion.text)}</legend>{''.join(choices)}"
            f'<label class="reason{"" if not_evaluable else " hidden"}">Why not evaluable '
            f'<input type="text" name="reason" maxlength="4000" value="{esc(reason)}"></label>'
            f'<label class="comment">Comment (optional) <textarea name="comment" rows="2" maxlength="4000">'
            f"{esc(comment)}</textarea></label>"
            f'<span class="status" role="status">{"saved" if answer is not None else ""}</span></fieldset>')


def _neighbours(rater: str, view: ItemView, queue: list[QueueEntry]) -> str:
    links = []
    before = [e for e in queue if e.position == view.position - 1]
    after = [e for e in queue if e.position == view.position + 1]
    if before:
        links.append(f'<a id="previous" href="/rate/{esc(rater)}/{esc(before[0].item)}">← previous</a>')
    links.append(f'<a href="/rate/{esc(rater)}">queue</a>')
    if after:
        links.append(f'<a id="next" href="/rate/{esc(rater)}/{esc(after[0].item)}">next →</a>')
    return "<nav>" + "".join(links) + "</nav>"


def item_body(rater: str, view: ItemView, queue: list[QueueEntry]) -> str:
    done = sum(e.done for e in queue)
    item_done = next((e.done for e in queue if e.item == view.item), False)
    nav = _neighbours(rater, view, queue)
    forms = "".join(criterion_form(c, view.answers.get(c.id)) for c in view.criteria)
    title = COMPONENT_TITLES.get(view.component, view.component)
    return (f'<main id="rating" data-rater="{esc(rater)}" data-item="{esc(view.item)}" data-saving="0">{nav}'
            f"<h1>Item {view.position} of {view.total}</h1>"
            f'<p class="progress"><span id="queue-done">{done}</span> of {len(queue)} items done · this item: '
            f'<span id="item-done">{"done" if item_done else "not done"}</span></p>'
            f'<div class="side"><section class="case"><h2>The case</h2><pre>{esc(view.case_text)}</pre></section>'
            f'<section class="output"><h2>{esc(title)}</h2><pre>{esc(view.output_text)}</pre></section></div>'
            f"<h2>Criteria</h2><p class=\"muted\">Each answer saves as you give it; a comment saves with its "
            f"criterion's score.</p>{forms}{nav}</main>")
