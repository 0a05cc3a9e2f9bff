"""What a run with a person at the table runs with (docs/human.md): its settings as ``simulate`` names them
(read from its flags, or from the ``human/session.json`` it saved), the protocol, run settings and models built
from them, and the run itself in its folder. ``simulate --human`` / ``--resume`` (cli/simulate_human.py) and the
studio's seat (web/seat.py) both run a seated run through here, so a run resumed from the browser runs with the
models and settings the terminal's resume would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from consilium.agents.labels import with_role_labels
from consilium.agents.records import FORMATS, Format
from consilium.cases import Case
from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import AnyProtocol, get_protocol
from consilium.models.factory import ModelOptions, build_model
from consilium.spec.connection import connection_options, default_concurrency, model_file
from consilium.spec.run_settings import protocol_config

__all__ = ["SeatedRun", "SeatedSettings"]


class SeatedSettings(BaseModel):
    """The settings of ``simulate`` a seated run uses, by the names of its flags' values (``args``); the rest of
    what a session saves (``-v``, ``--out``, the case's path) is not the run's concern here."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, strict=False)

    human: str  # an empty one is refused by HumanRun, naming --human
    protocol: str = "consilium"
    format: str = "both"
    answers: Path | None = None
    model: str | None = None
    model_default: str | None = "embedded"
    model_flag: str = "--model"
    model_file: Path | None = Field(default=None, alias="model_config")
    moderator_model: str | None = None
    base_url: str | None = None
    schema_dialect: str | None = None
    http_client: str | None = None
    token_param: str | None = None
    concurrency: int | None = None
    timeout: float | None = None
    max_attempts: int | None = None
    retry_base_delay: float | None = None
    no_cache: bool = False
    cache_path: Path | None = None
    config: Path | None = None
    seed: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    wall_limit: float | None = None
    max_rounds: int | None = None
    min_roles: int | None = None
    max_roles: int | None = None
    budget_tokens: int | None = None
    role_labels: str | None = None

    @classmethod
    def of(cls, args: Mapping[str, Any], where: str = "settings") -> SeatedSettings:
        """The settings from ``args`` (a parsed command line's values, or a session's saved ones): one line
        naming the setting if one is not of its kind."""
        try:
            return cls.model_validate(dict(args))
        except ValidationError as exc:
            raise UserError(f"{where}: {first_error(exc, prefix='args.')}") from None

    @property
    def formats(self) -> list[Format]:
        if self.format == "both":
            return list(FORMATS)
        if self.format not in FORMATS:
            raise UserError(f"--formats: {self.format!r} is not one of {', '.join([*FORMATS, 'both'])}")
        return [self.format]

    def spec(self) -> str:
        """The panel's model spec: the flag's, else the model config file's, else simulate's default."""
        config = model_file(self.model_file)
        spec = self.model or (config.spec if config else None) or self.model_default
        if spec is None:
            raise UserError(f"{self.model_flag}: a model is required (a spec, or --model-config FILE)")
        return spec

    def options(self) -> ModelOptions:
        """The model options the flags (over a ``--model-config`` file) give, as every command builds them."""
        config = model_file(self.model_file)
        priced = self.spec() if config is not None and config.prices is not None else None
        return connection_options(
            self.model_file, priced=priced, base_url=self.base_url, schema_dialect=self.schema_dialect,
            http_client=self.http_client, timeout=self.timeout, cache_path=self.cache_path,
            token_param=self.token_param, no_cache=self.no_cache, max_attempts=self.max_attempts,
            retry_base_delay=self.retry_base_delay,
            max_concurrency=self.concurrency or (config.max_concurrency if config else None)
            or default_concurrency(self.spec()))

    def run_config(self, protocol: AnyProtocol) -> ConsiliumConfig:
        """The run's settings: the ``--config`` file with the flags typed over it; a flag the protocol has no
        setting for is refused, and so is a wall-clock limit (the person's time to answer would count)."""
        config = protocol_config(protocol.config_model, protocol.name, self.config, self)
        config = with_role_labels(config, self.moderator_model or self.spec())
        if not isinstance(config, ConsiliumConfig):
            raise UserError(f"--human: protocol {protocol.name!r} seats no person")
        from consilium.graphs.consilium.human_run import check_config  # LangGraph on use

        check_config(config)
        return config


@dataclass
class SeatedRun:
    """A seated run ready to go: its protocol, settings, formats and models (closed by :meth:`run`)."""

    protocol: AnyProtocol
    config: ConsiliumConfig
    formats: list[Format]
    models: RunModels

    @classmethod
    def prepare(cls, settings: SeatedSettings) -> SeatedRun:
        """Everything checked before the run's folder is touched: the protocol seats a person, the settings
        hold, the models can be built."""
        protocol = get_protocol(settings.protocol)
        protocol.require("human_seat", "--human")  # as the protocol declares (Protocol.analyses)
        config = settings.run_config(protocol)
        formats = settings.formats
        options = settings.options()
        panel = build_model(settings.spec(), options)
        moderator = build_model(settings.moderator_model, options) if settings.moderator_model else panel
        return cls(protocol, config, formats, RunModels(panel=panel, moderator=moderator))

    async def run(self, case: Case, folder: Path, human: Any) -> list[Trace]:
        """Every format with the person at the table, checkpointed in ``folder/human``; the traces are whole
        unless ``human.paused`` says where a format stopped. The models are closed after."""
        from consilium.graphs.consilium.human_run import run_with_person  # LangGraph on use

        try:
            return await run_with_person(case, self.formats, self.models, self.config, run_id=folder.name,
                                         human=human)
        finally:
            await self.models.panel.aclose()
            if self.models.moderator is not self.models.panel:
                await self.models.moderator.aclose()
