"""Judge prompts: the rubric as instructions, the case, reference and candidate as tagged untrusted data.

Text inside a tagged section has ``&``, ``<`` and ``>`` escaped, so a report
that writes ``</candidate>`` or "ignore the rubric" cannot leave its section
or speak to the judge as an instruction (opentumorboard.txt, App. C).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

from consilium.judges.rubric import Criterion, Rubric
from consilium.models import Message

__all__ = ["anchors_text", "judge_messages", "judge_prompt_hash", "load_judge_prompt", "untrusted"]


def untrusted(tag: str, text: str) -> str:
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<{tag}>\n{escaped}\n</{tag}>"


@cache
def load_judge_prompt(name: str) -> str:
    return resources.files("consilium.judges").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8").strip()


def judge_prompt_hash(rubric: Rubric) -> str:
    digest = hashlib.sha256(rubric.model_dump_json().encode("utf-8"))
    folder = resources.files("consilium.judges").joinpath("prompts")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            digest.update(entry.read_bytes())
    return digest.hexdigest()[:12]


def _preamble(rubric: Rubric) -> str:
    rules = "\n".join(f"- {rule}" for rule in rubric.rules)
    return load_judge_prompt("preamble").format(rubric_title=rubric.title, instructions=rubric.instructions.strip(),
                                                rules=f"Rules:\n{rules}" if rules else "")


def judge_messages(rubric: Rubric, case_text: str, reference: str | None, candidate: str,
                   task: str) -> tuple[Message, ...]:
    """System: the rubric. User: case, reference and candidate first (shared by every criterion of a
    component, so they form a cacheable prefix), then the task."""
    sections = [untrusted("case", case_text)]
    if reference:
        sections.append(untrusted("reference", reference))
    sections.append(untrusted("candidate", candidate))
    return (Message(role="system", content=_preamble(rubric)),
            Message(role="user", content="\n\n".join(sections) + "\n\nTASK\n" + task))


def anchors_text(rubric: Rubric, criterion: Criterion) -> str:
    anchors = criterion.anchors or rubric.scale_anchors
    return "\n".join(f"{score}: {anchors.get(score, '')}".rstrip(": ") for score in rubric.scale)
