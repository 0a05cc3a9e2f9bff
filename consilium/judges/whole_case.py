"""What a whole-case criterion is judged on: every stage of the consilium, as the physicians saw it.

AI Consilium's physicians scored the whole-case criteria, "the adequacy of the specialist
composition, clinical complexity, and overall quality of all stages", on "the consensus report as a
whole" (ai-consilium.txt, Table 29, "Whole-case assessment" row, L260; anchors Tables 41-43,
L376-405): the assigned panel, the pre-consilium opinions, each report version and the review rounds,
not the final report alone. Each stage becomes its own tagged, escaped section of the judge prompt
(:func:`consilium.judges.prompting.judge_messages`), the final report staying the candidate.

When the prompt would not fit the judge model's context window, the earlier stages are shortened
first (the opinions, then the report versions from the oldest, then the review rounds), each cut
marked in the text ("[… shortened: N of M characters kept …]") and listed in the judgement item's
detail. The panel and the final report are never shortened; a prompt that still does not fit is
recorded as not fitting, and the runner makes its items not evaluable with that reason, unsent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from consilium.graphs.record import RecordSection, shorten
from consilium.models import Message
from consilium.models.tokens import count_message_tokens

__all__ = ["FLOOR_CHARS", "SECTION_TAGS", "TOKEN_MARGIN", "fit_stages", "fit_whole_case", "prompt_room",
           "prompt_tokens", "shorten"]

#: The prompt sections the stages go in (each is in :data:`consilium.judges.prompting.SECTIONS`).
SECTION_TAGS = ("panel", "opinion", "report_version", "review_round")

#: Our counts are tiktoken's (cl100k); the embedded model's own tokenizer, with its chat template,
#: counted up to 8 % more on symbol-heavy clinical text (3 % on the example cases), so a prompt is
#: fitted to its estimate times this.
TOKEN_MARGIN = 1.10
#: How far each earlier stage is cut before any is cut to the marker alone (about 100 tokens).
FLOOR_CHARS = 400
#: Room for the repair message a judge gets after an invalid answer (the wrappers' repair_message).
REPAIR_TOKENS = 128

Sections = tuple[tuple[str, str], ...]

def prompt_tokens(messages: Sequence[Message]) -> int:
    """A prompt's size as fitted: our token count times :data:`TOKEN_MARGIN`."""
    return math.ceil(count_message_tokens(list(messages)) * TOKEN_MARGIN)


def prompt_room(context: int | None, max_tokens: int, max_repairs: int) -> int | None:
    """Tokens a first prompt may take: the context less the answer and, for each repair, the invalid
    answer sent back and the repair message (the repair wrapper appends both)."""
    if context is None:
        return None
    return context - max_tokens - max_repairs * (max_tokens + REPAIR_TOKENS)


def _sections(stages: Sequence[RecordSection], keep: dict[int, int]) -> Sections:
    return tuple((s.tag, s.text(keep.get(i))) for i, s in enumerate(stages))


def _shortened(stages: Sequence[RecordSection], count: Callable[[Sections], int], room: int) -> dict[int, int]:
    """Characters to keep per stage index (absent: all) for the prompt to fit ``room``, or as close as the
    stages allow."""
    keep: dict[int, int] = {}
    groups = sorted({s.group for s in stages if s.group is not None})
    for floor in (FLOOR_CHARS, 0):
        for group in groups:
            members = [i for i, s in enumerate(stages) if s.group == group]

            def at(share: float, members: list[int] = members, floor: int = floor,
                   keep: dict[int, int] = keep) -> dict[int, int]:
                size = {i: len(stages[i].body) for i in members}
                return {**keep, **{i: min(keep.get(i, size[i]), max(min(size[i], floor), int(size[i] * share)))
                                   for i in members}}

            if count(_sections(stages, at(0.0))) > room:
                keep = at(0.0)
                continue
            low, high = 0.0, 1.0
            for _ in range(14):
                middle = (low + high) / 2
                low, high = (middle, high) if count(_sections(stages, at(middle))) <= room else (low, middle)
            return at(low)
    return keep


def fit_stages(stages: Sequence[RecordSection], count: Callable[[Sections], int], room: int | None,
               context: int | None) -> tuple[Sections, dict[str, Any]]:
    """The stages as prompt sections, shortened until ``count`` of the prompt is at most ``room``, and
    the record of it for the judgement item. Group by group, earliest first, each stage is first cut
    down to :data:`FLOOR_CHARS` at most (a binary search on the share of characters the group keeps,
    stopping at the group where the prompt fits); only if all of them at that floor do not fit are they
    cut further, in the same order, down to the marker alone."""
    keep: dict[int, int] = {}
    tokens = count(_sections(stages, keep))
    if room is not None and tokens > room:
        keep = _shortened(stages, count, room)
        tokens = count(_sections(stages, keep))
    shortened = [{"stage": stages[i].name, "section": stages[i].tag, "kept_chars": shorten(stages[i].body, k)[1],
                  "total_chars": len(stages[i].body)}
                 for i, k in sorted(keep.items()) if k < len(stages[i].body)]
    record: dict[str, Any] = {
        "stages": [s.name for s in stages], "context_tokens": context, "prompt_room": room,
        "prompt_tokens_estimate": tokens, "fits": None if room is None else tokens <= room,
        "shortened": shortened}
    return _sections(stages, keep), record


def fit_whole_case(stages: Sequence[RecordSection], messages: Callable[[Sections], Sequence[Message]],
                   context: int | None, max_tokens: int, max_repairs: int) -> tuple[Sections, dict[str, Any]]:
    """:func:`fit_stages` for a judge call: ``messages`` builds its prompt from the sections, ``context``
    is the judge model's window (:func:`consilium.models.tokens.context_window`; None: unknown, sent
    whole)."""
    room = prompt_room(context, max_tokens, max_repairs)
    return fit_stages(stages, lambda sections: prompt_tokens(messages(sections)), room, context)
