"""How a field of the study spec is given (consilium/spec/study.py): its flag, its experiment file's key, whether
a resume may change it, and the flag's help and argparse keywords as data, so a new option is one field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

__all__ = ["Option", "option_field", "option_in"]


@dataclass(frozen=True)
class Option:
    """How a spec field is given: its flag (None: not on the command line), its experiment file's key (a dotted
    path; None: not in the file), and whether a resume may give another value (``resume="may differ"``). A flag
    of the cohort's own has its ``help`` and its argparse keywords as data (``args``: ``type`` by name, ``aliases``;
    consilium/cli/cohort_study.py adds it); one without help is added by a group every model command shares."""

    flag: str | None
    experiment: str | None = None
    resume: Literal["same", "may differ"] = "same"
    help: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


def option_field(flag: str | None, experiment: str | None = None, resume: Literal["same", "may differ"] = "same",
                 default: Any = None, *, help: str | None = None, args: dict[str, Any] | None = None,
                 **pydantic: Any) -> Any:
    """A pydantic field that declares its :class:`Option` (kept as JSON in its schema's extra)."""
    make: Any = Field  # its overloads cannot see through **pydantic
    schema = {"option": [flag, experiment, resume], "help": help, "args": args or {}}
    return make(json_schema_extra=schema, **pydantic) if "default_factory" in pydantic \
        else make(default, json_schema_extra=schema, **pydantic)


def option_in(extra: object) -> Option:
    """The :class:`Option` a field made by :func:`option_field` declares (its ``json_schema_extra``)."""
    assert isinstance(extra, dict)
    option: Any = extra["option"]
    return Option(option[0], option[1], option[2], extra["help"], extra["args"])
