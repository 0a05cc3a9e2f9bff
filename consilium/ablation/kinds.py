"""The ablations: for each kind, what one finished consilium arm is re-run as, one thing changed.

- ``no-deliberation``: the initial report only (``review: false``: no review round);
- ``leave-one-out``: the same panel less one role, for each role in turn (``panel``: its opinion is not in the
  synthesis and it casts no vote);
- ``single``: the primary role alone, as the single-specialist baseline (consilium/graphs/single/);
- ``moderator``: the same panel (``panel``) under another moderator model;
- ``max-rounds``: the round cap set to each value asked for.

Each :class:`Condition` names the comparisons it enters (``groups``): the kind's own name, a round cap, or for
leave-one-out the left-out role's category and, for the primary role, ``primary``. Holm's adjustment runs over
a family of comparisons in which each ablated arm enters once (:func:`holm_family`): the categories are one,
``primary``, whose arms are also its categories', another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from consilium.agents.records import AssignedRole
from consilium.errors import UserError
from consilium.traces.schema import TraceBase

__all__ = ["KINDS", "PRIMARY", "Condition", "Kind", "conditions", "holm_family", "single_settings"]

Kind = Literal["no-deliberation", "leave-one-out", "single", "moderator", "max-rounds"]
#: In the order of docs/ablations.md.
KINDS: tuple[Kind, ...] = ("no-deliberation", "leave-one-out", "single", "moderator", "max-rounds")
#: The single-specialist baseline's settings that a consilium's run settings give it as they are.
_SHARED_WITH_SINGLE = ("min_roles", "max_roles", "temperature", "seed", "max_repairs", "timeout_s", "wall_limit_s",
                       "role_labels", "report_budget_chars")


#: The group of the primary role left out, whatever its category.
PRIMARY = "primary"


def holm_family(group: str) -> str:
    """The Holm family a comparison belongs to: ``primary`` tests again arms its categories test, so it is a
    family of its own; every other group of one model, format and metric is one family."""
    return PRIMARY if group == PRIMARY else ""


@dataclass(frozen=True)
class Condition:
    """One ablated run of an arm: the protocol it runs, its run settings, and what it changed."""

    name: str  #: in file names (``without-cardiologist``, ``max-rounds-2``)
    groups: tuple[str, ...]  #: the comparisons it enters
    protocol: str
    settings: dict[str, Any]
    moderator: str | None = None  #: another moderator's spec; None: the arm's own
    left_out: AssignedRole | None = None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def single_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The baseline's settings from a consilium's: the shared ones, and the role assignment's room, so that its
    assignment call is the consilium's own (and is reused)."""
    single = {k: settings[k] for k in _SHARED_WITH_SINGLE if k in settings}
    if "role_assignment" in settings.get("max_tokens", {}):
        single["max_tokens"] = {"role_assignment": settings["max_tokens"]["role_assignment"]}
    return single


def conditions(kind: Kind, trace: TraceBase, *, moderator: str | None = None,
               max_rounds: tuple[int, ...] = ()) -> list[Condition]:
    """What ``trace`` (a completed consilium arm) is re-run as, for ``kind``; none for a panel of one under
    leave-one-out (no panel would be left)."""
    settings = trace.config.run_settings()
    roles: list[AssignedRole] = list(getattr(trace, "roles", []))
    panel = [role.model_dump() for role in roles]
    if kind == "no-deliberation":
        return [Condition("no-deliberation", ("no-deliberation",), "consilium", {**settings, "review": False})]
    if kind == "max-rounds":
        return [Condition(f"max-rounds-{k}", (f"max_rounds={k}",), "consilium", {**settings, "max_rounds": k})
                for k in max_rounds]
    if kind == "single":
        return [Condition("single", ("single",), "single", single_settings(settings))]
    if kind == "moderator":
        if moderator is None:
            raise UserError("--moderator-model: --kind moderator needs the other moderator's model spec")
        return [Condition("moderator", ("moderator",), "consilium", {**settings, "panel": panel}, moderator=moderator)]
    if len(roles) < 2:
        return []
    return [Condition(f"without-{_slug(role.id)}", (role.category, *((PRIMARY,) if role.primary else ())),
                      "consilium", {**settings, "panel": [p for p in panel if p["id"] != role.id]}, left_out=role)
            for role in roles]

