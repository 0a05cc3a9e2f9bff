"""``--role-labels``: how the moderator names the panel, and its default by model (docs/consilium.md,
"Role assignment").

The default is resolved here, before a run starts, so that every new trace records the value it ran with;
the config field's own default, "free", is what a recorded config without the key reads as, which is how
every trace before the setting was made (consilium/traces/config.py).
"""

from __future__ import annotations

import argparse
from typing import TypeVar, get_args

from consilium.agents.schemas import RoleLabels
from consilium.traces.config import RunConfig

__all__ = ["add_role_labels_argument", "default_role_labels", "with_role_labels"]

C = TypeVar("C", bound=RunConfig)

#: The models whose role assignment is held to the catalogue by default: the bundled 135M model, left free,
#: writes labels such as "The most likely diagnosis is: CHDL-C"; every other model names them freely, as in
#: the paper.
CATALOGUE_BY_DEFAULT = ("embedded",)


def add_role_labels_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--role-labels", choices=get_args(RoleLabels), default=None,
                        help="how the moderator names the specialists: catalogue (one of the role catalogue's "
                             "names each, enforced by the schema) or free (free text, mapped to a category "
                             "afterwards, as in the paper) (default: catalogue for the embedded model, else free)")


def default_role_labels(*specs: str) -> RoleLabels:
    """``catalogue`` when every one of the moderator ``specs`` is a model that defaults to it, else ``free``."""
    backends = {spec.partition(":")[0] for spec in specs}
    return "catalogue" if backends and backends <= set(CATALOGUE_BY_DEFAULT) else "free"


def with_role_labels(config: C, *specs: str) -> C:
    """``config`` with role_labels as given (a flag, a --config file, an experiment's ``run:``), else as the
    moderator's model(s) default to."""
    if "role_labels" in config.model_fields_set:
        return config
    return config.model_copy(update={"role_labels": default_role_labels(*specs)})
