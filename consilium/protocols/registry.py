"""The protocols consilium knows: the built-in ones and any a package declares as a ``consilium.protocols``
entry point (docs/architecture.md, "Add a protocol"); and the trace reader, which asks them."""

from __future__ import annotations

import json
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.protocols.base import Protocol
from consilium.protocols.board.protocol import BOARD, TURN
from consilium.protocols.consilium.protocol import CONSILIUM
from consilium.protocols.single.protocol import SINGLE
from consilium.traces.schema import SCHEMA_VERSION, TraceBase
from consilium.traces.versions import TRACE_STEPS, upgrade

__all__ = ["BUILT_IN", "ENTRY_POINT_GROUP", "cohort_protocols", "get_protocol", "protocol_of", "protocols",
           "read_trace", "trace_from_data"]

AnyProtocol = Protocol[Any, Any]

#: One line per protocol: its name is its ``--protocol`` value and its traces' ``kind``.
BUILT_IN: tuple[AnyProtocol, ...] = (CONSILIUM, BOARD, TURN, SINGLE)
ENTRY_POINT_GROUP = "consilium.protocols"


@cache
def protocols() -> dict[str, AnyProtocol]:
    """Every protocol by name, the built-in ones first; a plugin may not take a built-in's name."""
    found: dict[str, AnyProtocol] = {p.name: p for p in BUILT_IN}
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        where = f"entry point {point.name!r} ({point.value}) in group {ENTRY_POINT_GROUP}"
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin is its author's to fix; say which one
            raise UserError(f"{where}: cannot be loaded ({type(exc).__name__}: {exc})") from None
        protocol = loaded() if isinstance(loaded, type) else loaded
        if not isinstance(protocol, Protocol):
            raise UserError(f"{where}: is not a consilium.protocols.base.Protocol")
        if protocol.name in found:
            raise UserError(f"{where}: protocol {protocol.name!r} is already defined (built-in or another plugin)")
        found[protocol.name] = protocol
    return found


def get_protocol(name: str, *, flag: str = "--protocol") -> AnyProtocol:
    known = protocols()
    if name not in known:
        raise UserError(f"{flag}: unknown protocol {name!r} (known: {', '.join(known)})")
    return known[name]


def cohort_protocols() -> list[str]:
    """The protocols a cohort can run: those with variants."""
    return [name for name, p in protocols().items() if p.variants]


def protocol_of(trace: TraceBase) -> AnyProtocol:
    """The protocol that made a trace (by its ``kind``)."""
    return get_protocol(str(getattr(trace, "kind", "")), flag="kind")


def trace_from_data(data: Any, where: str) -> TraceBase:
    """A trace from its JSON data (upgraded from an older schema version), validated by its protocol's model."""
    data = upgrade(data, current=SCHEMA_VERSION, steps=TRACE_STEPS, where=where)
    if not isinstance(data, dict):
        raise UserError(f"{where}: a trace is a JSON object")
    kind = data.get("kind")
    known = protocols()
    if kind not in known:
        raise UserError(f"{where}: kind: {kind!r} is not a known protocol (known: {', '.join(known)})")
    try:
        return known[kind].trace_model.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{where}: {first_error(exc)}") from None


def read_trace(path: str | Path) -> TraceBase:
    """The trace at ``path``, whatever its protocol; a missing, unreadable or invalid file is a user error."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{file}: trace not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{file}: not a readable JSON trace ({exc})") from None
    return trace_from_data(data, str(file))
