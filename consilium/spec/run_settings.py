"""Run settings in layers: a protocol's defaults, then a YAML file (``--config``), then what is given beside it
(a flag, a study spec's field); a problem names the file and field, or the flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from consilium.datafiles import first_error, read_data_file
from consilium.errors import UserError

__all__ = ["FLAG_NAMES", "RUN_FLAGS", "flag_name", "protocol_config", "run_config"]

C = TypeVar("C", bound=BaseModel)


FLAG_NAMES: dict[str, str] = {"timeout_s": "--timeout", "wall_limit_s": "--wall-limit", "prompt_files": "--prompt-file"}
"""Run-config fields whose flag is not the field's name with dashes (``max_rounds`` is ``--max-rounds``)."""


def flag_name(field: str) -> str:
    """The flag that sets run-config ``field``, as the user types it."""
    return FLAG_NAMES.get(field, "--" + field.replace("_", "-"))


def run_config(model: type[C], path: Path | None, flags: dict[str, Any], *, known_only: bool = False) -> C:
    """Run settings: the defaults, then a YAML file (``--config``), then flags given on the command line.

    ``flags`` is keyed by field. The file is checked on its own first, so a problem names the file and
    field; a problem the flags bring in names the flag (see :func:`flag_name`). ``known_only`` takes
    only the file's keys that ``model`` has (a cohort of several protocols, each taking its own share,
    has checked that every key belongs to one of them: consilium/cohort/protocols.py).
    """
    values: dict[str, Any] = {}
    if path is not None:
        loaded = read_data_file(path, "config") or {}
        if not isinstance(loaded, dict):
            raise UserError(f"{path}: a config file must be a mapping of settings")
        if known_only:
            loaded = {key: value for key, value in loaded.items() if key in model.model_fields}
            stages = getattr(model, "STAGE_TOKENS", None)
            if stages and isinstance(loaded.get("max_tokens"), dict):  # its own stages' budgets, by stage
                loaded["max_tokens"] = {k: v for k, v in loaded["max_tokens"].items() if k in stages}
        try:
            model.model_validate(loaded)
        except ValidationError as exc:
            raise UserError(f"{path}: {first_error(exc)}") from None
        values.update(loaded)
    given = {key: value for key, value in flags.items() if value is not None}
    if "max_tokens" in given and isinstance(given["max_tokens"], int) and not isinstance(given["max_tokens"], bool):
        stages = {**model.model_fields["max_tokens"].get_default(call_default_factory=True),
                  **values.get("max_tokens", {})}
        given["max_tokens"] = {stage: given["max_tokens"] for stage in stages}
    try:
        return model.model_validate({**values, **given})
    except ValidationError as exc:
        raise UserError(_flag_error(model, values, given, exc.errors()[0])) from None


def _flag_error(model: type[BaseModel], values: dict[str, Any], given: dict[str, Any], err: ErrorDetails) -> str:
    """``--flag: reason`` for a flag's bad value, or ``--flag: field.path: reason`` when the flag's value
    clashes with another field (``--min-roles 7`` against the default max_roles)."""
    where = ".".join(str(p) for p in err["loc"])
    field = str(err["loc"][0]) if err["loc"] else ""
    if field in given:
        rest = ".".join(str(p) for p in err["loc"][1:])
        return f"{flag_name(field)}: {rest + ': ' if rest else ''}{err['msg']}"

    def still_fails(without: str) -> bool:
        try:
            model.model_validate({**values, **{k: v for k, v in given.items() if k != without}})
        except ValidationError as exc:
            return any(e["loc"] == err["loc"] and e["type"] == err["type"] for e in exc.errors())
        return False

    culprits = [key for key in given if not still_fails(key)] or list(given)
    return f"{', '.join(flag_name(k) for k in culprits)}: {where + ': ' if where else ''}{err['msg']}"


#: A run setting typed on the command line → the attribute that holds it (on simulate's parsed flags and on a
#: seated run's saved settings alike).
RUN_FLAGS = {"max_rounds": "max_rounds", "min_roles": "min_roles", "max_roles": "max_roles", "seed": "seed",
             "temperature": "temperature", "max_tokens": "max_tokens", "budget_tokens": "budget_tokens",
             "timeout_s": "timeout", "wall_limit_s": "wall_limit", "role_labels": "role_labels"}


def protocol_config(model: type[C], protocol: str, path: Path | None, given: object) -> C:
    """A protocol's run settings: its config file (``path``) with the flags ``given`` holds typed over it
    (:data:`RUN_FLAGS`); a flag the protocol has no setting for is refused, naming the flag."""
    flags = {key: getattr(given, attribute) for key, attribute in RUN_FLAGS.items()}
    fields = model.model_fields
    for key, value in flags.items():
        if value is not None and key not in fields:
            raise UserError(f"{flag_name(key)}: not a setting of protocol {protocol!r}")
    return run_config(model, path, {k: v for k, v in flags.items() if k in fields})
