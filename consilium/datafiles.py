"""Reading a user's data file (YAML or JSON) into a pydantic model, with one-line errors.

Every settings file (model configs, experiments, run configs, scripts) goes through here, so a
mistake always reads ``<file>: <field.path>: <reason>`` and exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from consilium.errors import UserError

__all__ = ["first_error", "load_data_file", "read_data_file"]

M = TypeVar("M", bound=BaseModel)


def first_error(exc: ValidationError, prefix: str = "") -> str:
    """``field.path: reason`` of a validation error's first problem."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"{prefix}{where}: {err['msg']}"


def read_data_file(path: Path, what: str) -> Any:
    """The parsed content of a YAML (.yaml/.yml) or JSON file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the {what} ({exc})") from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise UserError(f"{path}: cannot read the {what} ({str(exc).splitlines()[0]})") from None


def load_data_file(path: Path, model: type[M], what: str) -> M:
    try:
        return model.model_validate(read_data_file(path, what))
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc)}") from None
