"""A LangGraph checkpoint serializer that stores no secret.

A checkpointer (the SQLite file of a person's run, ``human/checkpoints.sqlite``) writes the graph's
state at every step: case text, every answer, the person's input. Answers are masked as they come from
the backend (models/wrappers/masked.py), but the checkpoint is a file consilium writes and must hold no
secret whatever reaches the state, so every value is masked here too (consilium/redact.py: every string
inside dicts, lists, tuples, pydantic models and dataclasses) before it is serialized. A value of a kind
that cannot be copied with its strings masked, and that still carries a key once serialized, is refused
(an error, never written).
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from consilium.redact import holds_key, redact_value

__all__ = ["MaskingSerializer"]


class MaskingSerializer(JsonPlusSerializer):
    """:class:`JsonPlusSerializer` (same options, same msgpack allowlist) whose values are masked before
    they are serialized; reading is unchanged."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(redact_value(obj))
        if holds_key(data.decode("utf-8", "replace")):
            raise RuntimeError(f"a checkpoint value of type {type(obj).__name__} holds a secret that could not be "
                               "masked; it was not written")
        return kind, data
