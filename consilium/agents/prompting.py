"""Prompt files (data, next to the agents) and the message layout that keeps prefix caching effective.

Every call of a case starts with the same system preamble and the same
rendered case, byte for byte; the role and the task come last, so a server
with prefix caching (vLLM) reuses the case's KV blocks across all roles and rounds.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from consilium.models import Message

__all__ = ["case_messages", "load_prompt", "prompt_hashes"]


@cache
def load_prompt(name: str) -> str:
    return resources.files("consilium.agents").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8").strip()


def case_messages(case_text: str, task: str, *, preamble: str = "preamble", images: tuple[str, ...] = (),
                  captions: tuple[str, ...] = (), **fields: Any) -> tuple[Message, ...]:
    """System preamble, then the case (with any slide images, each with its caption), then the filled-in task."""
    body = load_prompt(task).format(**fields)
    return (
        Message(role="system", content=load_prompt(preamble)),
        Message(role="user", content=f"CASE\n{case_text}\n\nTASK\n{body}", images=images, captions=captions),
    )


def prompt_hashes() -> dict[str, str]:
    """sha256 (first 12 hex) of every prompt file, for the trace's config."""
    return dict(_prompt_hashes())


@cache
def _prompt_hashes() -> dict[str, str]:
    # Read once per process: the files ship inside the package and do not change under a run.
    import hashlib

    folder = resources.files("consilium.agents").joinpath("prompts")
    return {entry.name.removesuffix(".md"): hashlib.sha256(entry.read_bytes()).hexdigest()[:12]
            for entry in sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith(".md")}
