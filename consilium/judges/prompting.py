"""Judge prompts: the rubric as instructions, the case, reference and candidate as tagged untrusted data.

Text inside a tagged section has ``&``, ``<`` and ``>`` escaped, and so have the
look-alike angle brackets (full-width ``＜／candidate＞``, ``〈…〉``, ``‹…›``), so a
report that writes ``</candidate>`` or "ignore the rubric" cannot leave its section
or speak to the judge as an instruction (opentumorboard.txt, App. C). The task
itself sits in a ``<task>`` section written here, so a fake "TASK" heading inside a
report reads as data: a real tag cannot occur in escaped text. Every piece of
model or case text a judge sees goes through :func:`untrusted`, so none of it can
be read as the judge's instructions.

The task a call ends with is a prompt template (prompts/*.md) filled with the rubric's words and the short
sentences of prompts/sentences.yaml (the ``*_task`` functions below): only this project's text goes in a task;
model and case text travel as data sections.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from consilium.cases import Case
from consilium.graphs.registry import protocol_of
from consilium.judges.answers import Scope, criterion_shape, decisions_shape
from consilium.judges.components import turn_reference
from consilium.judges.rubric import Criterion, Rubric
from consilium.models import Message
from consilium.traces.schema import TraceBase

__all__ = ["SECTIONS", "JudgeSentences", "anchors_text", "criterion_task", "decisions_task", "diagnosis_task", "escape",
           "judge_messages", "judge_prompt_hash", "judge_sentences", "load_judge_prompt", "signed_task", "turn_inputs",
           "untrusted", "whole_case_task"]

Sections = tuple[tuple[str, str], ...]


#: Characters a judge model may read as an angle bracket, written as character references instead.
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"} | {
    ch: f"&#x{ord(ch):X};" for ch in "＜＞﹤﹥〈〉《》‹›⟨⟩⟪⟫〈〉⧼⧽ᐸᐳ˂˃"}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)

#: The data sections a judge prompt may have, in order; anything else in the prompt is ours.
#: question and role: a Specialist Turn's (opentumorboard.txt App. C.1); panel to review_round: the
#: stages of a whole-case record (consilium/judges/whole_case.py, ai-consilium.txt Table 29).
SECTIONS: tuple[str, ...] = ("case", "reference", "candidate", "criterion", "question", "role",
                             "panel", "opinion", "report_version", "review_round")


def escape(text: str) -> str:
    return text.translate(_ESCAPE_TABLE)


def untrusted(tag: str, text: str) -> str:
    return f"<{tag}>\n{escape(text)}\n</{tag}>"


@cache
def load_judge_prompt(name: str) -> str:
    return resources.files("consilium.judges").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8").strip()


class JudgeSentences(BaseModel):
    """The short sentences the task templates are filled with (prompts/sentences.yaml), byte for byte."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flag: str
    rationale_required: str
    not_evaluable: str
    dimension: str
    scope_frozen: str
    scope_frozen_locked: str
    scope_frozen_none: str
    scope_judge: str
    signed_error: str
    signed_requirement: str
    diagnosis_final: str
    diagnosis_ranked: str
    diagnosis_leading: str
    turn_role: str
    rules: str
    rule: str


@cache
def judge_sentences() -> JudgeSentences:
    text = resources.files("consilium.judges").joinpath("prompts", "sentences.yaml").read_text(encoding="utf-8")
    return JudgeSentences.model_validate(yaml.safe_load(text))


def judge_prompt_hash(rubric: Rubric, system: str | None = None) -> str:
    """sha256 (12 hex) of the rubric and every judge prompt file: the templates and their sentences.

    The hash names what the judge was asked, so the rubric's ``decoding`` pin is left out: it says how the
    calls are decoded, which every judgement records apart (``Judgement.decoding``), and a rubric made
    before the field existed keeps its hash (its records are not refused as made with another prompt). ``system``:
    a user's own system prompt replacing consilium's (``--prompt-file``), which enters the hash."""
    # Fields added since a rubric's hash was first recorded enter it only where the rubric sets them, so a
    # rubric that does not keeps its hash; the OpenTumorBoard layout's prompt files (prompts/otb/) enter the
    # hash of the rubrics in that layout only.
    unset = {name for name, default in _LATER_FIELDS.items() if getattr(rubric, name) == default}
    digest = hashlib.sha256(rubric.model_dump_json(exclude={"decoding", *unset}).encode("utf-8"))
    folders = [resources.files("consilium.judges").joinpath("prompts")]
    if rubric.layout == "otb":
        folders.append(folders[0].joinpath("otb"))
    for folder in folders:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith((".md", ".yaml")):
                digest.update(entry.read_bytes())
    if system is not None:
        digest.update(b"\0system\0" + system.encode("utf-8"))
    return digest.hexdigest()[:12]


#: Rubric fields added after hashes were recorded, with the value that leaves them out of the hash.
_LATER_FIELDS: dict[str, object] = {"layout": "consilium", "frozen_scale": None}


def _preamble(rubric: Rubric) -> str:
    said = judge_sentences()
    rules = "\n".join(said.rule.format(rule=rule) for rule in rubric.rules)
    return load_judge_prompt("preamble").format(rubric_title=rubric.title, instructions=rubric.instructions.strip(),
                                                rules=said.rules.format(rules=rules) if rules else "")


def judge_messages(rubric: Rubric, case_text: str, reference: str | None, candidate: str,
                   task: str, extra: Sequence[tuple[str, str]] = (), *, images: tuple[str, ...] = (),
                   captions: tuple[str, ...] = ()) -> tuple[Message, ...]:
    """System: the rubric. User: case, reference and candidate first (shared by every criterion of a
    component, so they form a cacheable prefix), then ``extra`` data sections (e.g. a case's own
    criterion), then the task. ``task`` is this project's text only: never put model or case text in
    it; pass that as a section. ``images`` (slide images, each sent with its caption from ``captions``)
    go with the user message to a judge that reads them (opentumorboard.txt App. C.1 L170)."""
    sections = [untrusted("case", case_text)]
    if reference:
        sections.append(untrusted("reference", reference))
    sections.append(untrusted("candidate", candidate))
    for tag, text in extra:
        if tag not in SECTIONS:
            raise ValueError(f"unknown judge prompt section {tag!r}")
        sections.append(untrusted(tag, text))
    system = Message(role="system", content=_preamble(rubric))
    closing = f"<task>\n{task}\n</task>"
    if not images:
        return system, Message(role="user", content="\n\n".join(sections) + f"\n\n{closing}")
    # Image parts follow their message's text, so the slides get a message of their own and the task
    # a last one: the task still comes after every piece of case text, captions included, so no
    # text before it can pose as the task.
    return (system,
            Message(role="user", content="\n\n".join(sections), images=images,
                    # A caption is case text: escaped in its own section, like every other.
                    captions=tuple(untrusted("case", caption) for caption in captions)),
            Message(role="user", content=closing))


def anchors_text(rubric: Rubric, criterion: Criterion) -> str:
    anchors = criterion.anchors or rubric.scale_anchors
    return "\n".join(f"{score}: {anchors.get(score, '')}".rstrip(": ") for score in rubric.scale)


# --- the task each call ends with ---------------------------------------------------------------------

def criterion_task(rubric: Rubric, criterion: Criterion, component: str) -> str:
    """One criterion's task (criterion.md; score first where the paper asks it, App. C.1 L172, C.2 L178)."""
    said = judge_sentences()
    flags = "".join(said.flag.format(id=f.id, definition=f.definition) for f in rubric.flags)
    template = "criterion_score_first" if rubric.answer.score_first else "criterion"
    # The component goes in last, by replacement, so a "{component}" in the rubric's text reads as it did.
    return load_judge_prompt(template).format(
        component="{component}", criterion_name=criterion.name, criterion_definition=criterion.definition,
        anchors=anchors_text(rubric, criterion), flags=flags, rationale_max_chars=rubric.rationale_max_chars,
        rationale_required=said.rationale_required if rubric.answer.rationale_required else "",
        not_evaluable=said.not_evaluable if rubric.not_evaluable else "",
        output_shape=criterion_shape(rubric)).replace("{component}", component)


def whole_case_task(rubric: Rubric, criterion: Criterion, component: str) -> str:
    """A whole-case criterion's task: what the record's sections are (whole_case.md), then the criterion."""
    return f"{load_judge_prompt('whole_case')}\n\n{criterion_task(rubric, criterion, component)}"


def decisions_task(rubric: Rubric, component: str, scope: Scope, locked: frozenset[str],
                   scope_text: str | None = None) -> str:
    """The four-decision task (opentumorboard.txt App. C.3 L184): every dimension in one answer; ``scope_text``:
    the scope's sentence where the layout has its own (otb_prompting.py)."""
    said = judge_sentences()
    dimensions = "\n".join(said.dimension.format(id=c.id, name=c.name, definition=c.definition.strip())
                           for c in rubric.criteria_for(component))
    if scope_text is None and scope == "frozen":
        fixed = ", ".join(c.id for c in rubric.criteria if c.id in locked)
        scope_text = said.scope_frozen + (said.scope_frozen_locked.format(locked=fixed) if fixed else
                                          said.scope_frozen_none)
    elif scope_text is None:
        scope_text = said.scope_judge
    return load_judge_prompt("four_decision").format(
        component=component, dimensions=dimensions, anchors=anchors_text(rubric, rubric.criteria[0]),
        scope=scope_text, rationale_max_chars=rubric.rationale_max_chars,
        output_shape=decisions_shape(rubric, locked, scope == "frozen"))


def signed_task(component: str, kind: str, weight: float) -> str:
    """One case criterion's task (npcbench.txt); the criterion itself is case text, sent as a section."""
    said = judge_sentences()
    return load_judge_prompt("signed_criterion").format(
        component=component, criterion_kind=kind.replace("_", " "), criterion_weight=f"{weight:g}",
        criterion_note=said.signed_requirement if kind == "requirement" else said.signed_error)


def diagnosis_task(rubric: Rubric, rank: int | None = None, leading: bool = False) -> str:
    """Whether one candidate diagnosis matches: the final conclusion's (``rank`` None) or the ``rank``-th
    of the differential, the leading diagnosis first (neural-medbench.txt L249, L403)."""
    said = judge_sentences()
    which = said.diagnosis_final if rank is None else \
        said.diagnosis_ranked.format(rank=rank) + (said.diagnosis_leading if leading else "")
    return load_judge_prompt("diagnosis").format(which=which, rules=" ".join(rubric.rules))


def turn_inputs(trace: TraceBase | None, case: Case, given: str | None) \
        -> tuple[Sections, str, dict[str, Any]]:
    """A Specialist Turn's question and target role as data sections, the task's note on them, and the
    item detail naming the reference answer used (opentumorboard.txt App. C.1 L170: the judge is given
    "the supplied case evidence, question, target specialist role, and reference expert answer")."""
    asked = protocol_of(trace).question(trace) if trace is not None else None
    if trace is None or asked is None:
        return (), "", {}
    question, role_label, category = asked
    answer = turn_reference(trace, case, given)
    role = judge_sentences().turn_role.format(role=role_label, category=category)
    return ((("question", question), ("role", role)),
            load_judge_prompt("turn") + "\n\n", {"reference_answer": answer.source if answer else None})
