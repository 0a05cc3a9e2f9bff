"""Which protocol an arms.csv row is (its ``protocol`` cell, or for a folder written before that column,
its format), and what the tables ask of a protocol, answered by the protocol registry."""

from __future__ import annotations

from collections.abc import Mapping

from consilium.graphs.base import Analyses
from consilium.graphs.registry import AnyProtocol, protocols

__all__ = ["arm_format", "arm_protocol", "completed_columns", "deliberates", "protocols_in", "require"]


def _protocol(name: str) -> AnyProtocol | None:
    return protocols().get(name)


def arm_protocol(arm: dict[str, str]) -> str:
    """An arms.csv row's protocol: its ``protocol`` cell. A row written before arms.csv had that column
    is told by its format, as the protocol that names one of its variants so (``board-agents``: the
    board); any other format (``free-form``, ``structured``) is a consilium arm's."""
    if arm.get("protocol"):
        return arm["protocol"]
    fmt = arm.get("format") or ""
    return next((p.name for p in protocols().values() if fmt in {p.arm_variant(v) for v in p.variants}),
                "consilium")


def protocols_in(arms: list[dict[str, str]]) -> list[str]:
    """The protocols of some arms, in the registry's order (one not installed last)."""
    found = {arm_protocol(a) for a in arms}
    known = [name for name in protocols() if name in found]
    return known + sorted(found - set(known))


def arm_format(protocol: str, variant: str) -> str | None:
    """How a protocol's arms of ``variant`` are named in arms.csv's ``format`` column (``single``'s
    ``free-form``: ``single-free-form``); None when the protocol has no such variant."""
    known = _protocol(protocol)
    if known is None:
        return None
    return known.arm_variant(variant) if variant in known.variants else None


def deliberates(protocol: str) -> bool:
    """Whether the protocol's cohort rows record review rounds (the consilium's votes, rounds and stop
    reasons: Tables 3's deliberation columns, 4, 9 and the figures)."""
    known = _protocol(protocol)
    return known is not None and "rounds" in known.row_columns


def completed_columns(protocol: str) -> tuple[Mapping[str, type | None], frozenset[str]]:
    """The arms.csv columns a completed arm of ``protocol`` must have (name -> its number type, None for text)
    and those of them that may be empty or absent, as the protocol declares (``Protocol.analyses``); a protocol
    not installed needs what every arm has."""
    known = _protocol(protocol)
    analyses = known.analyses if known is not None else Analyses()
    return analyses.completed_columns, analyses.optional_columns


def require(protocols: list[str], analysis: str, command: str) -> None:
    """Refuse ``command`` in one line when none of ``protocols`` (a folder's) supports ``analysis``, naming the
    first installed one and what it lacks (``Protocol.require``); nothing when one does or none is installed."""
    known = [p for p in map(_protocol, dict.fromkeys(protocols)) if p is not None]
    if known and not any(p.supports(analysis) for p in known):
        known[0].require(analysis, command)
