"""The stages a model call can be tagged with: declared by whoever makes the calls, never listed here.

A protocol declares its stages in its :class:`~consilium.graphs.base.Protocol` object (the consilium's
role_assignment, opinion, synthesis, vote, revision; the board's board_turn, conclusion; a plugin's own); the
judges, their calibration and ``models check`` have the three below, which no protocol owns. A call's tag
(:class:`~consilium.models.types.CallTag`) names a declared stage, so a misspelt one is refused before the call,
never a new ledger key; the usage tables list the declared stages in this order (docs/architecture.md).

The protocols are declared where they are defined, layers above the models that check a call's stage: the
package root, which may import every layer, registers what loads them (:func:`set_declarations_loader`), and
the first time a stage is checked that no one has declared yet, they are loaded once, so a stage is known
whichever module happened to be imported first. This module imports nothing of consilium's (lowest layer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["EVALUATION_STAGES", "check_stage", "declare_stages", "declared_stages", "scripted_rules",
           "set_declarations_loader", "stage_owners"]

#: Stages no protocol owns: a judge's call, a calibration (``consilium evolve``) call, ``models check`` and a
#: request with no tag.
EVALUATION_STAGES: tuple[str, ...] = ("judge", "calibration", "check")

#: owner (a protocol's name, or "evaluation") -> its stages, in declaration order.
_DECLARED: dict[str, tuple[str, ...]] = {"evaluation": EVALUATION_STAGES}
#: stage -> the scripted-panel rules its owner declared for it (models/backends/scripted.py).
_RULES: dict[str, list[dict[str, Any]]] = {}
_lock = threading.RLock()
_loaded = False
_loading: list[bool] = []
_loader: list[Callable[[], object]] = []


def declare_stages(owner: str, stages: Iterable[str],
                   rules: Mapping[str, Iterable[Mapping[str, Any]]] | None = None) -> None:
    """Declare ``owner``'s stages (a protocol's, when it is defined), and the scripted panel's answers for them.
    Declaring again replaces the owner's; a stage may be shared by several owners (role_assignment)."""
    names = tuple(dict.fromkeys(stages))
    bad = [s for s in names if not s or not s.replace("_", "").replace("-", "").isalnum()]
    if bad:
        raise ValueError(f"{owner}: stage {bad[0]!r} is not a name (letters, digits, _ or -)")
    rules = rules or {}
    undeclared = sorted(set(rules) - set(names))
    if undeclared:
        raise ValueError(f"{owner}: scripted rules for stage {undeclared[0]!r}, which it does not declare")
    _DECLARED[owner] = names
    for stage, stage_rules in rules.items():
        _RULES[stage] = [dict(rule, stage=stage) for rule in stage_rules]


def set_declarations_loader(loader: Callable[[], object]) -> None:
    """What loads every protocol's declaration (the package root's), called once, on the first undeclared stage."""
    _loader[:] = [loader]


def _load() -> None:
    """Load the protocols' declarations once, with the loader the package root registered."""
    global _loaded
    if _loaded:
        return
    with _lock:  # another thread waits for the declarations; this one's own nested checks do not reload them
        if _loaded or _loading:
            return
        _loading.append(True)
        try:
            for loader in _loader:
                loader()
            _loaded = bool(_loader)
        finally:
            _loading.clear()


def declared_stages() -> tuple[str, ...]:
    """Every declared stage, once, the protocols' in their registry's order and the evaluation stages last."""
    _load()
    owners = [o for o in _DECLARED if o != "evaluation"] + ["evaluation"]
    return tuple(dict.fromkeys(s for owner in owners for s in _DECLARED[owner]))


def stage_owners() -> dict[str, tuple[str, ...]]:
    """owner -> its declared stages (a copy)."""
    _load()
    return dict(_DECLARED)


def check_stage(stage: str) -> str:
    """``stage`` if someone declared it; else a ValueError naming the declared ones."""
    if any(stage in names for names in _DECLARED.values()):
        return stage
    _load()
    known = declared_stages()
    if stage not in known:
        raise ValueError(f"{stage!r} is not a declared stage (declared: {', '.join(known)})")
    return stage


def scripted_rules(stage: str) -> list[dict[str, Any]]:
    """The scripted panel's rules a protocol declared for ``stage`` (none for an undeclared one)."""
    _load()
    return [dict(rule) for rule in _RULES.get(stage, ())]
