"""What a backend and the shared layers are built with: server, key, timeouts, concurrency, cache, retries."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from consilium.models.pricing import Prices
from consilium.models.wrappers.retry import RetryPolicy
from consilium.redact import masked_fields, register_secret, register_url_credentials

__all__ = ["ModelOptions"]


@dataclass(frozen=True)
class ModelOptions:
    base_url: str | None = None
    api_key: str | None = None
    schema_dialect: str = "json_schema"
    http_client: str = "aiohttp"
    timeout_s: float = 120.0
    max_concurrency: int = 4
    cache: bool = True
    cache_path: Path | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    n_ctx: int = 8192
    #: ``openai:`` requests for reasoning models (models/reasoning.py): None follows the model name's rule.
    token_param: str | None = None
    omit_settings: tuple[str, ...] | None = None
    #: What the model's tokens cost (models/pricing.py); every call it answers records them. None: unknown.
    prices: Prices | None = None
    #: The spec ``prices`` are of: options shared by several models (a moderator, a cohort's extra models)
    #: price that one alone. None: every model built with these options.
    prices_spec: str | None = None

    def __post_init__(self) -> None:
        # Masked wherever they could be printed or stored (consilium/redact.py), a URL's user:password@
        # in the forms it is sent in (the Basic header, its base64).
        register_secret(self.api_key)
        register_url_credentials(self.base_url)

    def __repr__(self) -> str:
        """Every field, the key (any field a secret's name) as ``***`` and a base URL's credentials masked."""
        shown = masked_fields({f.name: getattr(self, f.name) for f in fields(self)})
        return f"ModelOptions({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @classmethod
    def from_env(cls, **overrides: object) -> ModelOptions:
        """Options with OPENAI_BASE_URL / OPENAI_API_KEY / CONSILIUM_CACHE filled in from the environment."""
        values: dict[str, object] = {
            "base_url": os.environ.get("OPENAI_BASE_URL") or None,
            "api_key": os.environ.get("OPENAI_API_KEY") or None,
        }
        cache_env = os.environ.get("CONSILIUM_CACHE", "")
        if cache_env.lower() in ("0", "off", "no", "false"):
            values["cache"] = False
        elif cache_env:
            values["cache_path"] = Path(cache_env)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

