"""``--role-labels``: how the moderator names the panel (docs/consilium.md, "Role assignment"); its default
by model is consilium/agents/labels.py's, resolved before a run starts."""

from __future__ import annotations

import argparse
from typing import get_args

from consilium.agents.schemas import RoleLabels

__all__ = ["add_role_labels_argument"]


def add_role_labels_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--role-labels", choices=get_args(RoleLabels), default=None,
                        help="how the moderator names the specialists: catalogue (one of the role catalogue's "
                             "names each, enforced by the schema) or free (free text, mapped to a category "
                             "afterwards, as in the paper) (default: catalogue for the embedded model, else free)")
