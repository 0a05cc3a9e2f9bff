"""A model's settings as a YAML file (configs/models/*.yaml, docs/models.md): its spec and how it is reached."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from consilium.models.pricing import Prices

__all__ = ["ModelConfigFile"]


class ModelConfigFile(BaseModel):
    """A model's settings as a YAML file (configs/models/*.yaml); flags given on the command line win."""

    # As strict as the run configs: `true` is not a count, `.nan` is not a timeout, "" is not a spec.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    description: str = ""
    spec: str = Field(min_length=1)
    base_url: str | list[str] | None = None
    schema_dialect: Literal["json_schema", "json_object", "none"] | None = None
    http_client: Literal["aiohttp", "sdk"] | None = None
    max_concurrency: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0)
    api_key_env: str | None = Field(default=None, description="the environment variable holding the API key")
    token_param: Literal["max_tokens", "max_completion_tokens"] | None = Field(
        default=None, description="how openai: sends the output cap (default: by the model name, docs/models.md)")
    omit_settings: list[Literal["temperature", "top_p", "seed"]] | None = Field(
        default=None, description="settings the model refuses, left out of openai: requests (default: by name)")
    prices: Prices | None = Field(default=None, description="USD per 1M input, cached_input and output tokens "
                                                            "(docs/models.md, Prices and cost)")

    @field_validator("base_url")
    @classmethod
    def _urls(cls, value: str | list[str] | None) -> str | list[str] | None:
        urls = value.split(",") if isinstance(value, str) else value
        if urls is not None and (not urls or any(not url.strip() or "," in url for url in urls)):
            raise PydanticCustomError("base_url", "expected a URL, a comma-separated list of URLs or a list "
                                                  "of URLs, with no empty entry")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        # The message never repeats the value: a key pasted here by mistake must not reach the console.
        if value is not None and not is_env_name(value):
            raise PydanticCustomError("api_key_env", "must be the name of an environment variable (letters, "
                                                     "digits and _), never the key itself")
        return value

    @property
    def base_urls(self) -> str | None:
        """``base_url`` as the options take it: several replicas comma-separated."""
        return ",".join(self.base_url) if isinstance(self.base_url, list) else self.base_url


def is_env_name(value: str) -> bool:
    """Whether ``value`` can name an environment variable (letters, digits and _, not a digit first)."""
    return value.isidentifier() and value.isascii()
