"""How a study's models are reached: the model options (a model config file, then what is given beside it) and
the calls in flight that suit a backend. The command line's model flags and a study spec both come here."""

from __future__ import annotations

import os
from pathlib import Path

from consilium.datafiles import load_data_file
from consilium.errors import UserError
from consilium.models.config_file import ModelConfigFile
from consilium.models.factory import ModelOptions
from consilium.models.wrappers import RetryPolicy

__all__ = ["BACKEND_CONCURRENCY", "DEFAULT_CONCURRENCY", "connection_options", "default_concurrency", "model_file"]

#: Model calls in flight by default, by the spec's backend: a server takes many, an in-process llama.cpp
#: context one (it serves one call at a time: more would only queue), anything else (scripted, replay, a
#: plugin) the general default. Resolved here alone (:func:`default_concurrency`); a cohort's manifest
#: records what it ran with (``settings.concurrency``).
BACKEND_CONCURRENCY: dict[str, int] = {"embedded": 1, "gguf": 1, "openai": 16, "vllm": 16}
DEFAULT_CONCURRENCY = 4


def default_concurrency(*specs: str) -> int:
    """The calls in flight that suit the specs' backends: the smallest, so a slow backend is never flooded."""
    return min((BACKEND_CONCURRENCY.get(spec.partition(":")[0], DEFAULT_CONCURRENCY) for spec in specs),
               default=DEFAULT_CONCURRENCY)


def model_file(path: Path | None) -> ModelConfigFile | None:
    """A ``--model-config`` file, checked (one line naming the file and field otherwise)."""
    return load_data_file(path, ModelConfigFile, "model config") if path is not None else None


def connection_options(path: Path | None, *, priced: str | None, base_url: str | None = None,
                       schema_dialect: str | None = None, http_client: str | None = None,
                       max_concurrency: int | None = None, timeout: float | None = None,
                       cache_path: Path | None = None, token_param: str | None = None, no_cache: bool = False,
                       max_attempts: int | None = None, retry_base_delay: float | None = None,
                       **overrides: object) -> ModelOptions:
    """The model options: the model config file at ``path`` (none: every setting unset), then each value given
    beside it, then ``overrides``. ``priced``: the spec the file's prices are of (a price list is one model's)."""
    config = model_file(path) or ModelConfigFile.model_construct(spec="")
    urls = config.base_url if not isinstance(config.base_url, list) else ",".join(config.base_url)
    values: dict[str, object] = {
        "base_url": base_url or urls,
        "schema_dialect": schema_dialect or config.schema_dialect or "json_schema",
        "http_client": http_client or config.http_client or "aiohttp",
        "max_concurrency": max_concurrency or config.max_concurrency or DEFAULT_CONCURRENCY,
        "timeout_s": timeout or config.timeout_s,
        "cache_path": cache_path,
        "token_param": token_param or config.token_param,
        "omit_settings": tuple(config.omit_settings) if config.omit_settings is not None else None,
    }
    if config.prices is not None:  # the prices of the model the file configures, not of a moderator or extra model
        values.update(prices=config.prices, prices_spec=priced)
    if config.api_key_env:
        key = os.environ.get(config.api_key_env)
        if not key:
            raise UserError(f"{path}: api_key_env: ${config.api_key_env} is not set")
        values["api_key"] = key
    if no_cache:
        values["cache"] = False
    if max_attempts or retry_base_delay is not None:
        default = RetryPolicy()
        values["retry"] = RetryPolicy(max_attempts=max_attempts or default.max_attempts,
                                      base_delay_s=default.base_delay_s if retry_base_delay is None
                                      else retry_base_delay)
    values.update({k: v for k, v in overrides.items() if v is not None})
    return ModelOptions.from_env(**values)
