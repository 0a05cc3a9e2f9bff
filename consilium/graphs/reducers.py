"""State reducers the protocols' graphs share (STYLE.md 5: every list field has an explicit reducer)."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["replace"]

T = TypeVar("T")


def replace(_old: list[T] | None, new: list[T]) -> list[T]:
    """A field set once (the panel): a later write replaces it rather than appending."""
    return new
