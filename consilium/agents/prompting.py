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

__all__ = ["SHARED", "case_messages", "load_prompt", "prompt_hashes"]


#: The package whose ``prompts/`` folder holds the prompts every protocol shares; a protocol package
#: keeps its own prompts in its own ``prompts/`` folder and names its package when it loads them.
SHARED = "consilium.agents"


@cache
def load_prompt(name: str, package: str = SHARED) -> str:
    return resources.files(package).joinpath("prompts", f"{name}.md").read_text(encoding="utf-8").strip()


def case_messages(case_text: str, task: str, *, preamble: str = "preamble", images: tuple[str, ...] = (),
                  captions: tuple[str, ...] = (), package: str = SHARED, preamble_package: str | None = None,
                  **fields: Any) -> tuple[Message, ...]:
    """System preamble, then the case (with any slide images, each with its caption), then the filled-in task;
    both prompts from ``package``'s ``prompts/`` folder (the preamble from ``preamble_package`` when given)."""
    body = load_prompt(task, package).format(**fields)
    return (
        Message(role="system", content=load_prompt(preamble, preamble_package or package)),
        Message(role="user", content=f"CASE\n{case_text}\n\nTASK\n{body}", images=images, captions=captions),
    )


def prompt_hashes(*packages: str) -> dict[str, str]:
    """sha256 (first 12 hex) of every prompt file of the shared folder and of ``packages``, for the trace's
    config."""
    hashes: dict[str, str] = {}
    for package in (SHARED, *packages):
        hashes.update(_prompt_hashes(package))
    return hashes


@cache
def _prompt_hashes(package: str) -> dict[str, str]:
    # Read once per process: the files ship inside the package and do not change under a run.
    import hashlib

    folder = resources.files(package).joinpath("prompts")
    # A Markdown prompt by its name; a data file of prompt sentences (YAML) by its file name.
    return {entry.name.removesuffix(".md"): hashlib.sha256(entry.read_bytes()).hexdigest()[:12]
            for entry in sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith((".md", ".yaml"))}
