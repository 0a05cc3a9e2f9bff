"""Model specs to model stacks.

A spec string picks the backend (``embedded``, ``gguf:PATH``, ``openai:MODEL``,
``vllm:MODEL``, ``scripted:FILE``, ``replay:TRACE``). :func:`build_model` wraps
it once per process in the shared layers (cache → retry → concurrency limit →
backend); :func:`for_run` adds the per-run layers (structured-output repair →
answer check → recording), so each run gets its own record of calls.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from consilium.errors import UserError
from consilium.models.protocol import ChatModel
from consilium.models.recording import CallRecorder, RecordingModel
from consilium.models.wrappers import (
    AnswerCheckModel,
    CachedModel,
    ConcurrencyLimitedModel,
    RetryingModel,
    RetryPolicy,
    StructuredOutputModel,
)
from consilium.redact import MASK, redact_url, register_secret

__all__ = ["SPEC_HELP", "ModelOptions", "build_model", "default_cache_path", "for_run", "open_backend"]

SPEC_HELP = "embedded, gguf:PATH, openai:MODEL, vllm:MODEL, scripted:FILE or replay:TRACE"


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

    def __post_init__(self) -> None:
        register_secret(self.api_key)  # masked wherever it could be printed or stored (consilium/redact.py)

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


def default_cache_path() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "consilium" / "responses.sqlite"


def open_backend(spec: str, options: ModelOptions | None = None) -> ChatModel:
    """The bare backend named by ``spec``; raises :class:`UserError` for an unknown spec."""
    options = options or ModelOptions()
    kind, _, arg = spec.partition(":")
    if kind == "embedded" and not arg:
        from consilium.models.backends.llama import (
            EMBEDDED_MODEL_ID,
            EMBEDDED_STAGE_MAX_TOKENS,
            LlamaCppModel,
            embedded_model_path,
        )

        return LlamaCppModel(embedded_model_path(), model_id=EMBEDDED_MODEL_ID, n_ctx=options.n_ctx,
                             stage_max_tokens=EMBEDDED_STAGE_MAX_TOKENS)
    if kind == "gguf" and arg:
        from consilium.models.backends.llama import LlamaCppModel

        return LlamaCppModel(arg, n_ctx=options.n_ctx)
    if kind == "openai" and arg:
        from consilium.models.backends.openai_compat import OpenAICompatModel
        from consilium.models.wrappers.pool import PooledModel

        # Several comma-separated base URLs: replicas of one model, calls spread over them.
        urls: list[str | None] = [u.strip() for u in (options.base_url or "").split(",") if u.strip()] or [None]
        replicas: list[ChatModel] = [
            OpenAICompatModel(arg, base_url=url, api_key=options.api_key, dialect=options.schema_dialect,
                              timeout_s=options.timeout_s, http_client=options.http_client) for url in urls]
        return replicas[0] if len(replicas) == 1 else PooledModel(replicas)
    if kind == "vllm" and arg:
        from consilium.models.backends.vllm_engine import VLLMModel

        return VLLMModel(arg)
    if kind == "scripted" and arg:
        from consilium.models.backends.scripted import ScriptedModel

        return ScriptedModel.from_file(arg)
    if kind == "replay" and arg:
        from consilium.models.backends.replay import ReplayModel

        return ReplayModel.from_trace(arg)
    raise UserError(f"unknown model spec {spec!r} (expected {SPEC_HELP})")


def build_model(spec: str, options: ModelOptions | None = None) -> ChatModel:
    """The backend with the shared layers. Scripted and replay models are never cached."""
    options = options or ModelOptions()
    model: ChatModel = open_backend(spec, options)
    model = ConcurrencyLimitedModel(model, options.max_concurrency)
    model = RetryingModel(model, options.retry)
    if options.cache and not spec.startswith(("scripted:", "replay:")):
        model = CachedModel(model, options.cache_path or default_cache_path())
    return model


def for_run(model: ChatModel, recorder: CallRecorder, *, max_repairs: int = 2, answer_retries: int = 2,
            accept_truncated: bool = False) -> ChatModel:
    """Per-run layers: every attempt is recorded; an empty or cut-off answer is asked again (at most
    ``answer_retries`` times, a cut-off one with twice the room) and then fails the stage; structured
    output is validated and repaired."""
    checked = AnswerCheckModel(RecordingModel(model, recorder), retries=answer_retries,
                               accept_truncated=accept_truncated)
    return StructuredOutputModel(checked, max_repairs=max_repairs)
