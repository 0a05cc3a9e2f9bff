"""The building blocks every case model shares: a strict base (unknown fields are errors, so a typo in
a case file is reported, not ignored) and a non-blank text field.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

__all__ = ["NonEmptyStr", "Strict"]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


#: Text that must hold more than whitespace.
NonEmptyStr = Annotated[str, AfterValidator(_not_blank)]


class Strict(BaseModel):
    """Base of every case model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")
