"""Judge prompts in the OpenTumorBoard authors' layout (otb_layout.py): the system message holds the rubric and
the task, in consilium's own words (prompts/otb/), and the user message the tagged data alone, as the official
code sends it; or, where the user gives a prompt file of their own (``--prompt-file``), that file's text as the
system message, verbatim, so the official prompts can be run as they ship.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from consilium.cases import Case
from consilium.graphs.registry import protocol_of
from consilium.judges.consistency_answer import consistency_shape
from consilium.judges.otb_layout import board_user, guard, turn_user
from consilium.judges.rubric import Rubric
from consilium.judges.scope_labels import DIMENSIONS
from consilium.models import Message
from consilium.traces.schema import TraceBase

__all__ = ["OtbSentences", "consistency_task", "frozen_scope_text", "load_otb_prompt", "otb_messages", "otb_sentences",
           "otb_system", "prompt_sha", "turn_note"]

Layout = Literal["board", "turn", "consistency"]


class OtbSentences(BaseModel):
    """The short sentences of prompts/otb/sentences.yaml, byte for byte."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tags_board: str
    tags_turn: str
    tags_consistency: str
    scope_frozen: str
    scope_frozen_locked: str
    scope_frozen_none: str
    criterion: str
    anchor: str
    flag: str


@cache
def load_otb_prompt(name: str) -> str:
    return resources.files("consilium.judges").joinpath("prompts", "otb", f"{name}.md").read_text("utf-8").strip()


@cache
def otb_sentences() -> OtbSentences:
    text = resources.files("consilium.judges").joinpath("prompts", "otb", "sentences.yaml").read_text("utf-8")
    return OtbSentences.model_validate(yaml.safe_load(text))


def otb_system(rubric: Rubric, task: str, layout: Layout) -> str:
    """The system message: the rubric's instructions and rules, then the task, naming the layout's tags."""
    said = otb_sentences()
    rules = "".join(f"- {rule.strip()}\n" for rule in rubric.rules)
    tags = {"board": said.tags_board, "turn": said.tags_turn, "consistency": said.tags_consistency}[layout]
    return load_otb_prompt("preamble").format(rubric_title=rubric.title, tags=tags,
                                              instructions=rubric.instructions.strip() + "\n",
                                              rules=f"Rules:\n{rules}" if rules else "", task=task)


def _anchor_lines(anchors: Mapping[int, str]) -> str:
    said = otb_sentences()
    return "\n".join(said.anchor.format(score=score, text=" ".join(text.split()))
                     for score, text in sorted(anchors.items()) if score >= 0)


def consistency_task(rubric: Rubric, locked: frozenset[str]) -> str:
    """The consistency judge's task: the decisions' 0-5 anchors, the whole-response criteria, the flags and the
    answer's shape (``locked``: the decisions the frozen scope leaves absent)."""
    said = otb_sentences()
    decisions = [c for c in rubric.criteria if c.id in DIMENSIONS]
    wholes = [c for c in rubric.criteria if c.id not in DIMENSIONS]
    criteria = "\n".join(said.criterion.format(id=c.id, definition=" ".join(c.definition.split()),
                                                anchors=_anchor_lines(c.anchors)) for c in wholes)
    flags = "".join(said.flag.format(id=f.id, definition=" ".join(f.definition.split())) for f in rubric.flags)
    return load_otb_prompt("consistency").format(
        decision_anchors=_anchor_lines(decisions[0].anchors if decisions else {}), criteria=criteria, flags=flags,
        rationale_max_chars=rubric.rationale_max_chars, output_shape=consistency_shape(rubric, locked))


def frozen_scope_text(locked: frozenset[str], order: list[str]) -> str:
    """The four-decision task's scope sentence under a frozen scope."""
    said = otb_sentences()
    names = ", ".join(name for name in order if name in locked)
    return said.scope_frozen + (said.scope_frozen_locked.format(locked=names) if names else said.scope_frozen_none)


def turn_note() -> str:
    """What a Specialist Turn's sections are, before its criterion's task."""
    return load_otb_prompt("turn") + "\n\n"


def otb_messages(rubric: Rubric, case: Case, trace: TraceBase | None, reference: str, component: str,
                 candidate: str, task: str, images: tuple[str, ...] = (), captions: tuple[str, ...] = (),
                 system: str | None = None) -> tuple[Message, ...]:
    """A board conclusion's or a Specialist Turn answer's judge messages; ``system``: a user's own prompt
    replacing consilium's (the data still in the official layout); ``images``: slide images for a judge that
    reads them, each sent followed by its caption from ``captions``, after the data (the official batch builder
    puts each image at its ``<image>`` mark, before its caption; the captions stay in <SLIDE_DESCRIPTIONS>)."""
    asked = protocol_of(trace).question(trace) if trace is not None and component == "answer" else None
    layout: Layout = "board" if asked is None else "turn"
    if asked is not None:
        question, role, _category = asked
        user = turn_user(case, role, question, reference, candidate)
    else:
        user = board_user(case, reference, candidate)
    text = system if system is not None else otb_system(rubric, task, layout)
    return (Message(role="system", content=text),
            Message(role="user", content=user, images=images, captions=tuple(guard(c) for c in captions)))


def prompt_sha(texts: Mapping[str, str]) -> dict[str, str]:
    """sha256 (12 hex) of each user prompt by its stage."""
    import hashlib

    return {stage: hashlib.sha256(text.encode("utf-8")).hexdigest()[:12] for stage, text in sorted(texts.items())}
