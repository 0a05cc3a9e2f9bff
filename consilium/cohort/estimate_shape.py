"""Each protocol's stage structure, as the bounds of a cohort estimate (consilium/cohort/estimate.py).

For one variant of one arm, each stage's calls between the fewest and the most the protocol's graph can
make under its run settings (panel size ``min_roles``..``max_roles``, review rounds 1..``max_rounds``,
board turns), its fixed prompt (preamble and task template around the case, counted with the project's
tokenizer), the most tokens of earlier answers its prompt can carry, and its ``max_tokens``. A stage
marked ``shared`` is made once per (case, model) and shared by the arm's variants (the role assignment);
one marked ``chair`` is answered by the moderator's model (``--moderator-model``), as its calls are tagged
``role="moderator"``. A stage answered by both (a board's turns) is two bounds of the same stage. Every
answer checked against a schema (all but a board specialist's) may be sent back ``max_repairs`` times
(models/wrappers/repair.py), each repair a call that carries the answers before it: the most calls and
tokens count them all. An empty or cut-off answer asked again (models/wrappers/answers.py) is not counted:
that is the server failing, not the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from string import Formatter

from consilium.agents.moderator import catalogue_labels
from consilium.agents.prompting import SHARED, load_prompt
from consilium.graphs.board.agents import PROMPTS as BOARD
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.single.config import SingleConfig
from consilium.graphs.single.graph import PROMPTS as SINGLE
from consilium.models.tokens import count_message_tokens, count_tokens
from consilium.models.types import Message
from consilium.traces.config import RunConfig

__all__ = ["Prompt", "StageBounds", "stage_bounds"]


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
    add (earlier answers, the panel's names, numbers), the most tokens one answer may have, and whether the
    moderator answers it (``chair``)."""

    stage: str
    calls: tuple[int, int]
    prompt: Prompt
    carried_tokens: int
    max_output: int
    shared: bool = False
    chair: bool = False
    checked: bool = True  # its answer is checked against a schema, so repaired up to ``repairs`` times
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
def _prompt(task: str, package: str, preamble: str = "preamble", preamble_package: str = SHARED) -> Prompt:
    literal = "".join(text for text, _, _, _ in Formatter().parse(load_prompt(task, package)))
    return Prompt(load_prompt(preamble, preamble_package), literal)


#: Tokens of the numbers a prompt states (length budgets, report version, round): a few each.
NUMBERS = 16


@cache
def _catalogue() -> int:
    return count_tokens(", ".join(catalogue_labels()))


def _fill(c: RunConfig) -> int:
    """The most a prompt's placeholders add besides earlier answers: the panel's names and briefs (at most
    the role assignment's answer), the catalogue's labels a moderator may be offered, and its numbers."""
    return c.tokens_for("role_assignment") + _catalogue() + NUMBERS


def _fmt(variant: str) -> str:
    return variant.replace("-", "_")


def _assignment(c: RunConfig) -> tuple[int, int]:
    """One call, and one more role asked for (``add_role``) for each the moderator named short of
    ``min_roles``: at most ``min_roles`` calls (agents/moderator.py)."""
    return 1, max(c.min_roles, 1)


def _consilium(variant: str, c: ConsiliumConfig) -> list[StageBounds]:
    """ai-consilium.txt Fig. 2: roles, an opinion per role, a synthesis, then rounds of a vote per role and
    a revision between rounds (consilium/graphs/consilium/graph.py)."""
    fmt = _fmt(variant)
    low_n, high_n = (len(c.panel),) * 2 if c.panel else (c.min_roles, c.max_roles)
    rounds = c.max_rounds if c.review else 0
    report = max(c.tokens_for("synthesis"), c.tokens_for("revision"))
    assign = (0, 0) if c.panel else _assignment(c)
    return [
        StageBounds("role_assignment", assign, _prompt("assign_roles", SHARED), 0, c.tokens_for("role_assignment"),
                    shared=True, chair=True),
        StageBounds("opinion", (low_n, high_n), _prompt(f"opinion_{fmt}", SHARED), 0, c.tokens_for("opinion")),
        StageBounds("synthesis", (1, 1), _prompt(f"synthesis_{fmt}", SHARED),
                    high_n * c.tokens_for("opinion"), c.tokens_for("synthesis"), chair=True),
        StageBounds("vote", (low_n * min(rounds, 1), high_n * rounds), _prompt("vote", SHARED), report,
                    c.tokens_for("vote")),
        # A revision follows every round but the last (at max_rounds the tally stops: round_limit).
        StageBounds("revision", (0, max(rounds - 1, 0)), _prompt(f"revision_{fmt}", SHARED),
                    report + high_n * c.tokens_for("vote"), c.tokens_for("revision"), chair=True),
    ]


def _single(variant: str, c: SingleConfig) -> list[StageBounds]:
    """The consilium's role assignment, then the primary role's one answer (graphs/single/graph.py)."""
    return [
        StageBounds("role_assignment", _assignment(c), _prompt("assign_roles", SHARED), 0,
                    c.tokens_for("role_assignment"), shared=True, chair=True),
        StageBounds("opinion", (1, 1), _prompt(f"answer_{_fmt(variant)}", SINGLE), 0, c.tokens_for("opinion")),
    ]


def _board(variant: str, c: BoardConfig) -> list[StageBounds]:
    """agents: roles, then moderator and specialist turns, then the conclusion; single: the whole meeting in
    one call (opentumorboard.txt App. B; graphs/board/graph.py, agents.py). The moderator (its own prompt
    and model) opens every turn with a call, a pass being a call without a turn of its own, and closes the
    meeting: at most ``max_turns`` calls, the specialists at most ``max_turns - 1``. Fewest, from 5 turns on:
    ask, answer, ask, answer, close (two specialists must speak before the moderator may close); under that
    the limit may end the meeting after one question and its answer."""
    if variant == "single":
        return [StageBounds("board_turn", (1, 1), _prompt("board_single", BOARD, "board_preamble", BOARD), 0,
                            c.tokens_for("board_single"))]
    transcript = c.max_turns * c.tokens_for("board_turn")
    asks, answers = (3, 2) if c.max_turns >= 5 else (1, 1)
    return [
        StageBounds("role_assignment", _assignment(c), _prompt("assign_roles", SHARED, "board_preamble", BOARD), 0,
                    c.tokens_for("role_assignment"), chair=True),
        StageBounds("board_turn", (asks, c.max_turns), _prompt("board_moderator", BOARD, "board_preamble", BOARD),
                    transcript, c.tokens_for("board_turn"), chair=True),
        StageBounds("board_turn", (answers, c.max_turns - 1),
                    _prompt("board_specialist", BOARD, "board_preamble", BOARD), transcript,
                    c.tokens_for("board_turn"), checked=False),  # a specialist speaks in plain text
        StageBounds("conclusion", (1, 1), _prompt("board_conclusion", BOARD, "board_preamble", BOARD), transcript,
                    c.tokens_for("conclusion"), chair=True),
    ]


def stage_bounds(protocol: str, variant: str, config: RunConfig) -> list[StageBounds] | None:
    """The stages of ``protocol`` in ``variant`` under ``config``; None for a protocol whose structure this
    module does not know (a plugin's): its estimate then needs ``--like``."""
    if protocol == "consilium" and isinstance(config, ConsiliumConfig):
        stages = _consilium(variant, config)
    elif protocol == "single" and isinstance(config, SingleConfig):
        stages = _single(variant, config)
    elif protocol == "board" and isinstance(config, BoardConfig):
        stages = _board(variant, config)
    else:
        return None
    return [replace(s, carried_tokens=s.carried_tokens + _fill(config), repairs=config.max_repairs if s.checked else 0)
            for s in stages]
