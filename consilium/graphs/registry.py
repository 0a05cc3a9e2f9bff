"""The protocols consilium knows: the built-in ones and any a package declares as a ``consilium.protocols``
entry point (docs/architecture.md, "Add a protocol"); and the trace reader, which asks them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.graphs.base import Protocol
from consilium.graphs.board.protocol import BOARD, TURN
from consilium.graphs.consilium.protocol import CONSILIUM
from consilium.graphs.single.protocol import SINGLE
from consilium.log import get_logger
from consilium.stages import declare_stages
from consilium.traces.schema import SCHEMA_VERSION, TraceBase
from consilium.traces.versions import TRACE_STEPS, upgrade

__all__ = ["BUILT_IN", "ENTRY_POINT_GROUP", "VariantKind", "baselines", "chosen_variants", "cohort_protocols",
           "get_protocol",
           "protocol_of", "protocols", "read_trace", "trace_from_data", "variant_kinds"]

AnyProtocol = Protocol[Any, Any]
log = get_logger(__name__)

#: One line per protocol: its name is its ``--protocol`` value and its traces' ``kind``.
BUILT_IN: tuple[AnyProtocol, ...] = (CONSILIUM, BOARD, TURN, SINGLE)
ENTRY_POINT_GROUP = "consilium.protocols"


@cache
def _registry() -> tuple[dict[str, AnyProtocol], dict[str, str]]:
    """Every protocol that loads, by name, the built-in ones first; and, by entry-point name, why each plugin
    that does not load was left out. A broken plugin never takes the others down with it: it is refused when
    asked for by name (or when a trace of its kind is read)."""
    found: dict[str, AnyProtocol] = {p.name: p for p in BUILT_IN}
    for protocol in BUILT_IN:  # the stages a call may be tagged with are the registered protocols' (a plugin's below)
        declare_stages(protocol.name, protocol.stages, protocol.scripted)
    broken: dict[str, str] = {}
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        loaded = _load(point, found)
        if isinstance(loaded, str):
            broken[point.name] = loaded
            log.warning("protocol_plugin_skipped", reason=loaded)
        else:
            found[loaded.name] = loaded
    return found, broken


def _load(point: EntryPoint, found: dict[str, AnyProtocol]) -> AnyProtocol | str:
    """The plugin's protocol, or why it cannot be one (a broken plugin is its author's to fix: say which)."""
    where = f"entry point {point.name!r} ({point.value}) in group {ENTRY_POINT_GROUP}"
    try:
        loaded = point.load()
        protocol = loaded() if isinstance(loaded, type) else loaded
    except Exception as exc:
        return f"{where}: cannot be loaded ({type(exc).__name__}: {exc})"
    if not isinstance(protocol, Protocol):
        return f"{where}: is not a consilium.graphs.base.Protocol"
    if protocol.name in found:
        return f"{where}: protocol {protocol.name!r} is already defined (built-in or another plugin)"
    try:
        declare_stages(protocol.name, protocol.stages, protocol.scripted)
    except ValueError as exc:
        return f"{where}: {exc}"
    if not protocol.variant_kind.isidentifier() or protocol.variant_kind != protocol.variant_kind.lower():
        return f"{where}: variant_kind {protocol.variant_kind!r} is not a lower-case name (it names a flag)"
    return protocol


def protocols() -> dict[str, AnyProtocol]:
    """Every protocol that loads, by name, the built-in ones first."""
    return _registry()[0]


def get_protocol(name: str, *, flag: str = "--protocol") -> AnyProtocol:
    known, broken = _registry()
    if name in known:
        return known[name]
    if name in broken:
        raise UserError(broken[name])
    problems = f"; plugins that did not load: {', '.join(sorted(broken))}" if broken else ""
    raise UserError(f"{flag}: unknown protocol {name!r} (known: {', '.join(known)}{problems})")


def cohort_protocols() -> list[str]:
    """The protocols a cohort can run: those with variants."""
    return [name for name, p in protocols().items() if p.variants]


@dataclass(frozen=True)
class VariantKind:
    """One kind of variant (``formats``, ``modes`` or a plugin's own) and what follows from it: simulate's flag
    ``--<kind>``, whose values are the variants of the protocols of this kind. (A cohort's flags and experiment
    fields select formats and modes only so far: a cohort runs every variant of a kind of its own.)"""

    kind: str
    protocols: tuple[str, ...]
    values: tuple[str, ...]

    @property
    def flag(self) -> str:
        return f"--{self.kind}"

    @property
    def field(self) -> str:
        """Its name in an experiment file and as an API keyword."""
        return self.kind


def variant_kinds() -> dict[str, VariantKind]:
    """Every variant kind the registered protocols declare, by kind, in the registry's order (``formats`` first):
    the protocols of each and their variants, each once. What the CLI's flags, the experiment file's fields and
    the API's keywords are made from (a new protocol's kind adds its own)."""
    kinds: dict[str, tuple[list[str], list[str]]] = {}
    for name, protocol in protocols().items():
        if protocol.variants:
            names, values = kinds.setdefault(protocol.variant_kind, ([], []))
            names.append(name)
            values.extend(v for v in protocol.variants if v not in values)
    return {kind: VariantKind(kind, tuple(names), tuple(values)) for kind, (names, values) in kinds.items()}


def chosen_variants(protocol: AnyProtocol, given: Sequence[str] | None) -> list[str]:
    """The variants of ``protocol`` that its kind's flag (``--<kind>``) names, in the protocol's order; all of
    them when it is not given. A name the protocol does not run in is refused, naming the flag and its values."""
    if not protocol.variants:
        raise UserError(f"--protocol: {protocol.name!r} is not run on a case in variants (see `consilium turn`)")
    if given is None:
        return list(protocol.variants)
    unknown = [v for v in given if v not in protocol.variants]
    if unknown or not given:
        raise UserError(f"{protocol.variant_flag}: {unknown[0] if unknown else 'none given'}: the {protocol.name} "
                        f"protocol runs in {', '.join(protocol.variants)}")
    return [v for v in protocol.variants if v in given]


def baselines() -> dict[str, str]:
    """protocol -> the protocol ``compare`` sets it against, as each declares (``consilium``: ``single``)."""
    return {name: p.analyses.baseline for name, p in protocols().items() if p.analyses.baseline}


def protocol_of(trace: TraceBase) -> AnyProtocol:
    """The protocol that made a trace (by its ``kind``)."""
    return get_protocol(str(getattr(trace, "kind", "")), flag="kind")


def trace_from_data(data: Any, where: str) -> TraceBase:
    """A trace from its JSON data (upgraded from an older schema version, the one place that does), validated by
    its protocol's model and noted as read from ``where`` and written as its version."""
    written = str(data.get("schema_version")) if isinstance(data, dict) else SCHEMA_VERSION
    data = upgrade(data, current=SCHEMA_VERSION, steps=TRACE_STEPS, where=where)
    if not isinstance(data, dict):
        raise UserError(f"{where}: a trace is a JSON object")
    kind = data.get("kind")
    known, broken = _registry()
    if isinstance(kind, str) and kind in broken:
        raise UserError(f"{where}: kind: {kind!r}: {broken[kind]}")
    if kind not in known:
        raise UserError(f"{where}: kind: {kind!r} is not a known protocol (known: {', '.join(known)})")
    try:
        trace = known[kind].trace_model.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{where}: {first_error(exc)}") from None
    return trace.read_from(where, written)


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
