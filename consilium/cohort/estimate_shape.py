"""Each protocol's stage structure, as the bounds of a cohort estimate (consilium/cohort/estimate.py).

Each protocol declares its stages' calls, prompts and answers for a variant under its run settings
(``Protocol.bounds``; consilium/graphs/bounds.py says what they mean); here every stage is given what a
prompt's placeholders add besides earlier answers (the panel's names and briefs, the catalogue's labels, a few
numbers) and its repairs (the run settings' ``max_repairs``, for an answer checked against a schema).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from consilium.agents.moderator import catalogue_labels
from consilium.graphs.bounds import StageBounds
from consilium.graphs.registry import get_protocol
from consilium.models.tokens import count_tokens
from consilium.traces.config import RunConfig

__all__ = ["stage_bounds"]

#: Tokens of the numbers a prompt states (length budgets, report version, round): a few each.
NUMBERS = 16


@cache
def _catalogue() -> int:
    return count_tokens(", ".join(catalogue_labels()))


def _fill(c: RunConfig) -> int:
    """The most a prompt's placeholders add besides earlier answers: the panel's names and briefs (at most
    the role assignment's answer), the catalogue's labels a moderator may be offered, and its numbers."""
    return c.tokens_for("role_assignment") + _catalogue() + NUMBERS


def stage_bounds(protocol: str, variant: str, config: RunConfig) -> list[StageBounds] | None:
    """The stages of ``protocol`` in ``variant`` under ``config``, as it declares them; None for a protocol that
    declares none (its estimate then needs ``--like``)."""
    stages = get_protocol(protocol).bounds(variant, config)
    if stages is None:
        return None
    return [replace(s, carried_tokens=s.carried_tokens + _fill(config), repairs=config.max_repairs if s.checked else 0)
            for s in stages]
