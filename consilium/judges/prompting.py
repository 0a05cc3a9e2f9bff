"""Judge prompts: the rubric as instructions, the case, reference and candidate as tagged untrusted data.

Text inside a tagged section has ``&``, ``<`` and ``>`` escaped, and so have the
look-alike angle brackets (full-width ``＜／candidate＞``, ``〈…〉``, ``‹…›``), so a
report that writes ``</candidate>`` or "ignore the rubric" cannot leave its section
or speak to the judge as an instruction (opentumorboard.txt, App. C). The task
itself sits in a ``<task>`` section written here, so a fake "TASK" heading inside a
report reads as data: a real tag cannot occur in escaped text. Every piece of
model or case text a judge sees goes through :func:`untrusted`, so none of it can
be read as the judge's instructions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict

from consilium.judges.rubric import Criterion, Rubric
from consilium.models import Message

__all__ = ["SECTIONS", "JudgeSentences", "anchors_text", "escape", "judge_messages", "judge_prompt_hash",
           "judge_sentences", "load_judge_prompt", "untrusted"]


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


def judge_prompt_hash(rubric: Rubric) -> str:
    """sha256 (12 hex) of the rubric and every judge prompt file: the templates and their sentences.

    The hash names what the judge was asked, so the rubric's ``decoding`` pin is left out: it says how the
    calls are decoded, which every judgement records apart (``Judgement.decoding``), and a rubric made
    before the field existed keeps its hash (its records are not refused as made with another prompt)."""
    digest = hashlib.sha256(rubric.model_dump_json(exclude={"decoding"}).encode("utf-8"))
    folder = resources.files("consilium.judges").joinpath("prompts")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".md", ".yaml")):
            digest.update(entry.read_bytes())
    return digest.hexdigest()[:12]


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
