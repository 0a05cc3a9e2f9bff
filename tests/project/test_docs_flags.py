"""The docs name only flags the command line has, and docs/models.md lists the backends the registry has,
so the docs cannot drift from the code again.

A flag counts where the docs show it as code: in an inline code span that is a consilium command or starts
with the flag, or on a command line of a fenced block that runs consilium (continuation lines joined).
Other tools' flags (``vllm serve --port``) are not ours; the few named inline alone are listed in FOREIGN.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from consilium.cli import build_parser
from consilium.models.backends.registry import BUILTIN_BACKENDS, SPEC_HELP

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])
FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
INLINE = re.compile(r"`([^`\n]+)`")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
RUNS_CONSILIUM = re.compile(r"(^|[\s/])(consilium|python -m consilium)(\s|$)")

#: Flags of other programs that the docs name in an inline span of their own, and why.
FOREIGN = {
    "--enable-prompt-tokens-details": "vllm serve's (docs/models.md, docs/scale.md)",
    "--allow-blocking": "langgraph dev's (docs/studio.md)",
    "--tensor-parallel-size": "vllm serve's (docs/scale.md)",
    "--data-parallel-size": "vllm serve's (docs/scale.md)",
    "--port": "vllm serve's and langgraph dev's (docs/scale.md)",
    "--only": "benchmarks/embedded_commands.py's (docs/performance.md)",
    "--before": "benchmarks/cohort_process.py's and benchmarks/figures.py's (docs/performance.md)",
    "--timeout-s": "named as what the flag is not (docs/reliability.md: `--timeout`, not `--timeout-s`)",
}


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found, todo = [], [parser]
    while todo:
        current = todo.pop()
        found.append(current)
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(dict.fromkeys(action.choices.values()))
    return found


def _flags(*, hidden: bool) -> set[str]:
    """Every option string of every (sub)command; with ``hidden``, the deprecated spellings too."""
    return {flag for parser in _parsers(build_parser()) for action in parser._actions
            if hidden or action.help != argparse.SUPPRESS for flag in action.option_strings}


def _command_lines(block: str) -> list[str]:
    """The lines of a fenced block that run consilium, each with its continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.split(" #")[0] for line in joined.splitlines() if RUNS_CONSILIUM.search(line.split(" #")[0])]


def documented_flags(path: Path) -> dict[str, str]:
    """Flag → the first piece of code that names it, in one Markdown file."""
    text = path.read_text(encoding="utf-8")
    pieces = [line for block in FENCE.findall(text) for line in _command_lines(block)]
    pieces += [span for span in INLINE.findall(FENCE.sub("", text))
               if span.lstrip().startswith("-") or RUNS_CONSILIUM.search(span)]
    found: dict[str, str] = {}
    for piece in pieces:
        for flag in FLAG.findall(piece):
            found.setdefault(flag, piece.strip())
    return {flag: piece for flag, piece in found.items() if flag not in FOREIGN}


def test_the_extraction_sees_code_spans_and_command_lines() -> None:
    sample = ROOT / "README.md"
    flags = documented_flags(sample)
    assert {"--case", "--model"} <= set(flags)
    assert "--port" not in flags  # `vllm serve --port 8000` in a block is another program's


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_flag_the_docs_name_exists(path: Path) -> None:
    known = _flags(hidden=True)
    missing = {flag: piece for flag, piece in documented_flags(path).items() if flag not in known}
    assert missing == {}, f"{path.name} names flags no command has: {missing}"


@pytest.mark.parametrize("path", sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_the_docs_use_a_flag_s_current_spelling(path: Path) -> None:
    """A deprecated spelling (a hidden alias, ``--max-concurrency``) is named only as such: on a line that
    calls it the old spelling."""
    old = _flags(hidden=True) - _flags(hidden=False)
    named = [line for line in path.read_text(encoding="utf-8").splitlines()
             if any(f"`{flag}" in line for flag in old) and "old spelling" not in line]
    assert named == [], f"{path.name} names deprecated spellings: {named}"


def test_models_md_lists_the_registry_s_backends() -> None:
    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    section = text.split("## Model specs", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `([a-z]+)[:`]", section, re.M)
    assert rows == list(BUILTIN_BACKENDS)
    assert f"(expected {SPEC_HELP})" in section
