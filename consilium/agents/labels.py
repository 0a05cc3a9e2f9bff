"""The default of ``role_labels`` (how the moderator names the panel) by model, in one place for the CLI,
the Python API and the LangGraph dev graphs (docs/consilium.md, "Role assignment").

The default is resolved before a run starts, so every new trace records the value it ran with; the config
field's own default, "free", is what a recorded config without the key reads as, which is how every trace
before the setting was made (consilium/traces/config.py).
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from consilium.agents.schemas import RoleLabels

__all__ = ["CATALOGUE_BY_DEFAULT", "default_role_labels", "with_role_labels"]

#: The models whose role assignment is held to the catalogue by default: the bundled 135M model, left free,
#: writes labels such as "The most likely diagnosis is: CHDL-C"; every other model names them freely, as in
#: the paper.
CATALOGUE_BY_DEFAULT = ("embedded",)


C = TypeVar("C", bound=BaseModel)  # a run config: RunConfig or a protocol's


def default_role_labels(*specs: str) -> RoleLabels:
    """``catalogue`` when every one of the moderator ``specs`` is a model that defaults to it, else ``free``
    (also when no spec is known: a model object given to the API)."""
    backends = {spec.partition(":")[0] for spec in specs}
    return "catalogue" if backends and backends <= set(CATALOGUE_BY_DEFAULT) else "free"


def with_role_labels(config: C, *specs: str) -> C:
    """``config`` with role_labels as given (a flag, a --config file, an experiment's ``run:``, the API's
    config), else as the moderator's model(s) default to."""
    if "role_labels" in config.model_fields_set:
        return config
    return config.model_copy(update={"role_labels": default_role_labels(*specs)})
