"""What a backend and the shared layers are built with: server, key, timeouts, concurrency, cache, retries."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from consilium.errors import UserError
from consilium.models.pricing import Prices
from consilium.models.wrappers.retry import RetryPolicy
from consilium.redact import KEY_VARIABLES, MASK, redact_url, register_secret, register_url_credentials

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
        if self.api_key:
            _check_key(self.api_key)

    def __repr__(self) -> str:
        """Every field but the key itself; a base URL's credentials masked."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "api_key"}
        shown["api_key"] = MASK if self.api_key else None
        if self.base_url:
            shown["base_url"] = redact_url(self.base_url)
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


_CHARACTER_NAMES = {"\r": "a carriage return (\\r)", "\n": "a line feed (\\n)", "\t": "a tab (\\t)", " ": "a space"}


def _check_key(key: str) -> None:
    """Refuse a key with whitespace, a control character or a non-ASCII character (a paste mistake: a
    trailing newline), naming the variable it came from and the character, never the key: sent as it is,
    it breaks the request's header (an internal error, or a connection failure retried to the end)."""
    position, bad = next(((i, ch) for i, ch in enumerate(key)
                          if ch.isspace() or not ch.isprintable() or not ch.isascii()), (-1, ""))
    if not bad:
        return
    character = _CHARACTER_NAMES.get(bad, f"the character U+{ord(bad):04X}")
    where = "ends with" if not key[position:].strip() else "starts with" if not key[:position + 1].strip() else "holds"
    raise UserError(f"{_key_source(key)} {where} {character}; an API key has no whitespace or control "
                    "characters (a paste mistake?): set it again without it")


def _key_source(key: str) -> str:
    """The environment variable that holds ``key`` (``$OPENAI_API_KEY`` first, else the first by name), or
    "the API key" when it came from elsewhere (the Python API)."""
    names = [n for n in KEY_VARIABLES if os.environ.get(n) == key]
    names += sorted(n for n, value in os.environ.items() if value == key and n not in names)
    return f"${names[0]}" if names else "the API key"
