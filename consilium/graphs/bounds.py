"""What a protocol declares of its runs' size before any runs: each stage's calls, prompt and answers, per variant
(``Protocol.bounds``), read by a cohort's estimate (consilium/cohort/estimate.py; docs/cohorts.md, "Estimating a
cohort").

For one variant of one arm, each stage's calls between the fewest and the most the protocol's graph can make
under its run settings (panel size ``min_roles``..``max_roles``, review rounds 1..``max_rounds``, board turns),
its fixed prompt (preamble and task template around the case, counted with the project's tokenizer), the most
tokens of earlier answers its prompt can carry, and its ``max_tokens``. A stage marked ``shared`` is made once
per (case, model) and shared by the arm's variants (the consilium's role assignment); one marked ``chair`` is
answered by the moderator's model (``--moderator-model``), as its calls are tagged ``role="moderator"``. A stage
answered by both (a board's turns) is two bounds of the same stage. Every answer checked against a schema
(``checked``) may be sent back ``max_repairs`` times (models/wrappers/repair.py), each repair a call that carries
the answers before it: the most calls and tokens count them all. An empty or cut-off answer asked again
(models/wrappers/answers.py) is not counted: that is the server failing, not the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from string import Formatter

from consilium.agents.prompting import SHARED, load_prompt
from consilium.models.tokens import count_message_tokens
from consilium.models.types import Message
from consilium.traces.config import RunConfig

__all__ = ["REPAIR_NOTE", "Prompt", "StageBounds", "assignment_calls", "prompt"]


@dataclass(frozen=True)
class Prompt:
    """A stage's fixed text: its system preamble and its task with every placeholder left empty (what is
    filled in there, a role's name or an earlier answer, is counted apart, as ``carried_tokens``)."""

    system: str
    task: str

    def tokens(self, case_tokens: int) -> int:
        """The prompt's tokens around a case of ``case_tokens``, as case_messages lays it out
        (agents/prompting.py); the case is counted once, apart, for every stage."""
        return _around(self) + case_tokens


@cache
def _around(prompt: Prompt) -> int:
    return count_message_tokens([Message(role="system", content=prompt.system),
                                 Message(role="user", content=f"CASE\n\n\nTASK\n{prompt.task}")])


#: Tokens of one repair request at most (models/wrappers/repair.py: what was wrong, and what to send instead).
REPAIR_NOTE = 128


@dataclass(frozen=True)
class StageBounds:
    """One stage of one variant: calls (fewest, most), its fixed prompt, the most tokens its placeholders
    add (earlier answers), the most tokens one answer may have, whether the moderator answers it (``chair``),
    whether it is made once for the arm's variants (``shared``) and whether its answer is checked against a
    schema (so repaired up to ``repairs`` times, the run settings' ``max_repairs``, which the estimate sets)."""

    stage: str
    calls: tuple[int, int]
    prompt: Prompt
    carried_tokens: int
    max_output: int
    shared: bool = False
    chair: bool = False
    checked: bool = True
    repairs: int = 0

    @property
    def most(self) -> int:
        """The most calls, every answer repaired as often as the run settings allow."""
        return self.calls[1] * (1 + self.repairs)

    @property
    def repaired_tokens(self) -> int:
        """The most a repair adds to a call's prompt: every earlier answer and its repair request."""
        return self.repairs * (self.max_output + REPAIR_NOTE)


@cache
def prompt(task: str, package: str, preamble: str = "preamble", preamble_package: str = SHARED) -> Prompt:
    """The prompt of ``task`` (a prompt file of ``package``) under ``preamble``, its placeholders left empty."""
    literal = "".join(text for text, _, _, _ in Formatter().parse(load_prompt(task, package)))
    return Prompt(load_prompt(preamble, preamble_package), literal)


def assignment_calls(config: RunConfig) -> tuple[int, int]:
    """The shared role assignment's calls: one, and one more role asked for (``add_role``) for each the
    moderator named short of ``min_roles``: at most ``min_roles`` calls (agents/moderator.py)."""
    return 1, max(config.min_roles, 1)
