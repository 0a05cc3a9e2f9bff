"""The protocols one cohort runs side by side, each in its own variants and under its own run settings.

A cohort names one protocol or several (``--protocol consilium,single``). A variant flag (``--<kind>``: a kind
a protocol declares, ``--formats``, ``--modes`` or a plugin's own) applies to every protocol whose
``variant_flag`` it is; a protocol whose flag is not given runs all its variants. Run settings (a ``--config``
file, an experiment's ``run:``) are one mapping: each protocol takes the keys its config model has, and a key
that no protocol of the cohort has is an error naming it (docs/cohorts.md, "Several protocols").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from consilium.errors import UserError
from consilium.graphs.registry import AnyProtocol, cohort_protocols, get_protocol
from consilium.graphs.registry import protocols as all_protocols

__all__ = ["cohort_variants", "protocol_list", "protocol_problem", "split_settings"]


def protocol_problem(names: Sequence[str]) -> str | None:
    """What is wrong with a cohort's list of protocols (empty, unknown, repeated, none of its own); None if fine."""
    known = cohort_protocols()
    alone = [n for n in names if n in all_protocols() and n not in known]
    if alone:
        return f"protocol {alone[0]!r} runs one question at a time, not as a cohort (a cohort runs {', '.join(known)})"
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        return (f"unknown protocol(s) {', '.join(repr(n) for n in unknown) or '(none)'} (a cohort runs "
                f"{', '.join(known)})")
    repeated = sorted({n for n in names if list(names).count(n) > 1})
    if repeated:
        return f"protocol(s) {', '.join(repeated)} given twice"
    return None


def protocol_list(text: str, flag: str = "--protocol") -> list[str]:
    """``consilium,single`` as a list of the cohort's protocols, each one a cohort can run, each once."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    problem = protocol_problem(names)
    if problem is not None:
        raise UserError(f"{flag}: {problem}")
    return names


def _takes(protocols: Sequence[str], flag: str) -> list[AnyProtocol]:
    return [p for p in map(get_protocol, protocols) if p.variant_flag == flag]


def _offer(protocols: Sequence[str]) -> str:
    """What each protocol of the cohort is run in, e.g. ``consilium takes --formats free-form,structured``."""
    return "; ".join(f"{p.name} takes {p.variant_flag} {','.join(p.variants)}" for p in map(get_protocol, protocols))


def _runs_in(protocols: Sequence[AnyProtocol]) -> str:
    """``second-look runs in brisk, unhurried``, for each protocol named."""
    return "; ".join(f"{p.name} runs in {', '.join(p.variants)}" for p in protocols)


def cohort_variants(protocols: Sequence[str], given: Mapping[str, Sequence[str]],
                    where: Mapping[str, str]) -> dict[str, list[str]]:
    """Each protocol's variants: those given for its variant flag (``given``: flag → names), in the order
    given, else all of its own. ``where`` names each flag's source in an error (the flag, or a file's
    field). A flag that no protocol of the cohort takes, a name no protocol taking it has, or a protocol
    left with none is an error."""
    for flag, names in given.items():
        takers = _takes(protocols, flag)
        source = where.get(flag, flag)
        if not takers:
            raise UserError(f"{source}: no protocol of this cohort ({', '.join(protocols)}) is run in "
                            f"{flag.removeprefix('--')} ({_offer(protocols)})")
        known = list(dict.fromkeys(v for p in takers for v in p.variants))
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise UserError(f"{source}: unknown {flag.removeprefix('--').removesuffix('s')}(s) "
                            f"{', '.join(unknown) or '(none)'} ({_runs_in(takers)})")
    variants: dict[str, list[str]] = {}
    for protocol in map(get_protocol, protocols):
        chosen = given.get(protocol.variant_flag)
        variants[protocol.name] = list(protocol.variants) if chosen is None else [
            v for v in dict.fromkeys(chosen) if v in protocol.variants]
        if not variants[protocol.name]:
            source = where.get(protocol.variant_flag, protocol.variant_flag)
            raise UserError(f"{source}: none of {', '.join(chosen or ())} is a variant of protocol {protocol.name} "
                            f"({', '.join(protocol.variants)})")
    return variants


def split_settings(values: Mapping[str, Any], protocols: Sequence[str], where: str) -> dict[str, dict[str, Any]]:
    """Each protocol's share of run settings: the keys its config model has (``min_roles`` goes to every
    protocol, ``max_rounds`` to the consilium alone). A key no protocol of the cohort has is an error at
    ``where`` (``"c.yaml: "``, ``"exp.yaml: run."``) and the key."""
    fields = {name: set(get_protocol(name).config_model.model_fields) for name in protocols}
    for key in values:
        if not any(key in known for known in fields.values()):
            raise UserError(f"{where}{key}: Extra inputs are not permitted (no protocol of this cohort has this "
                            f"setting: {', '.join(protocols)})")
    shares = {name: {k: v for k, v in values.items() if k in fields[name]} for name in protocols}
    tokens = values.get("max_tokens")
    if isinstance(tokens, dict):
        # max_tokens is by stage: each protocol takes its own stages (the consilium's vote budget is not the
        # single baseline's to refuse); a stage no protocol of the cohort has is still an error.
        stages = {name: set(get_protocol(name).config_model.STAGE_TOKENS) for name in protocols}
        for stage in tokens:
            if not any(stage in known for known in stages.values()):
                raise UserError(f"{where}max_tokens: unknown stage {stage!r} (no protocol of this cohort "
                                f"has it: {', '.join(protocols)})")
        for name in protocols:
            if "max_tokens" in shares[name]:
                shares[name]["max_tokens"] = {k: v for k, v in tokens.items() if k in stages[name]}
    return shares
