"""An experiment setup file (configs/experiments/*.yaml): protocols, variants, run settings, judges."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from consilium.agents.records import FORMATS, Format
from consilium.cohort.protocols import VARIANT_FLAGS, protocol_problem, split_settings
from consilium.datafiles import first_error, load_data_file
from consilium.errors import UserError
from consilium.protocols.registry import get_protocol

__all__ = ["Experiment", "experiment_variants", "load_experiment"]

Mode = Literal["agents", "single"]
MODES: tuple[Mode, ...] = ("agents", "single")


class Experiment(BaseModel):
    """An experiment setup file (configs/experiments/*.yaml)."""

    # Strict, as the run configs are: a bad format or mode names the file's field, not a flag.
    model_config = ConfigDict(extra="forbid", strict=True)

    description: str = ""
    protocol: str | list[str] = Field(default="consilium", description="a protocol, or a list run side by side")
    formats: list[Format] = Field(default_factory=lambda: list(FORMATS), min_length=1)
    modes: list[Mode] = Field(default_factory=lambda: list(MODES), min_length=1)
    run: dict[str, Any] = Field(default_factory=dict, description="run settings; each protocol takes those of "
                                                                 "its config (ConsiliumConfig, BoardConfig, …)")
    judges: list[str] = []

    @field_validator("protocol")
    @classmethod
    def _protocols(cls, value: str | list[str]) -> str | list[str]:
        problem = protocol_problem([value] if isinstance(value, str) else value)
        if problem is not None:
            raise PydanticCustomError("protocol", problem)
        return value

    @property
    def protocols(self) -> list[str]:
        return [self.protocol] if isinstance(self.protocol, str) else list(self.protocol)


def load_experiment(path: Path) -> Experiment:
    """The file, with its ``run:`` checked by each protocol's config model on the keys that model has."""
    experiment = load_data_file(path, Experiment, "experiment")
    for name, values in split_settings(experiment.run, experiment.protocols, f"{path}: run.").items():
        try:
            get_protocol(name).config_model.model_validate(values)
        except ValidationError as exc:
            raise UserError(f"{path}: {first_error(exc, prefix='run.')}") from None
    return experiment


def experiment_variants(experiment: Experiment, protocols: list[str],
                        path: Path | None) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The variants the file sets (flag → names) for the flags a protocol of the cohort takes, and where
    each is set (for an error). A field the file leaves out, or that no such protocol takes, sets nothing."""
    given: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    flags = {get_protocol(name).variant_flag for name in protocols}
    for flag, field in VARIANT_FLAGS.items():
        if field in experiment.model_fields_set and flag in flags:
            given[flag] = list(getattr(experiment, field))
            where[flag] = f"{path}: {field}" if path is not None else field
    return given, where
