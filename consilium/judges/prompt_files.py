"""A user's own judge prompts (``--prompt-file STAGE=PATH``): each file's text replaces consilium's system prompt
at its stage, byte for byte, so a user with the OpenTumorBoard repository can run its judge prompts verbatim
(``evaluation/prompts/*.txt``, ``training/verl_otb/source_data/*.txt``); consilium ships none of them. The data
still reach the judge in the rubric's layout, and the judgement records each file's sha256
(``Judgement.prompt_files``) and folds it into ``prompt_hash``.

A judging stage is a rubric's name, or ``otb-scope`` for the candidate-blind scope call. Read as the official
code reads its prompts: the text stripped of leading and trailing white space.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from consilium.errors import UserError
from consilium.judges.otb_steps import SCOPE_STAGE
from consilium.judges.rubric import Rubric

__all__ = ["judge_stages", "read_prompt_files"]


def judge_stages(rubric: Rubric) -> list[str]:
    """The stages a judge's prompt file may replace for ``rubric``."""
    return [rubric.name, *([SCOPE_STAGE] if rubric.kind.takes_scope else [])]


def read_prompt_files(given: Iterable[str], stages: list[str], flag: str = "--prompt-file") -> dict[str, str]:
    """``STAGE=PATH`` items as stage → the file's text; a malformed item, an unknown or repeated stage, or a file
    that cannot be read or is empty is a one-line :class:`UserError` naming the flag and the item."""
    prompts: dict[str, str] = {}
    for item in given:
        stage, sep, path = item.partition("=")
        if not sep or not stage.strip() or not path.strip():
            raise UserError(f"{flag}: {item!r} is not STAGE=PATH")
        stage = stage.strip()
        if stage not in stages:
            raise UserError(f"{flag}: {item!r}: unknown stage {stage!r} (here: {', '.join(stages)})")
        if stage in prompts:
            raise UserError(f"{flag}: stage {stage!r} is given twice")
        file = Path(path.strip()).expanduser()
        try:
            text = file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{flag}: {file}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
        if not text:
            raise UserError(f"{flag}: {file}: the prompt file is empty")
        prompts[stage] = text
    return prompts
