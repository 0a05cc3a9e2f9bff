"""Model specs to model stacks.

A spec string picks the backend (``embedded``, ``gguf:PATH``, ``openai:MODEL``,
``vllm:MODEL``, ``scripted:FILE``, ``replay:TRACE`` or an installed plugin's; see
backends/registry.py). :func:`build_model` wraps it once per process in the shared
layers (prices → cache → retry → masking of secrets → concurrency limit → backend; the cache only for a backend
whose answers may be cached); :func:`for_run` adds the per-run layers
(structured-output repair → answer check → recording → observation, which tells
LangChain's callbacks, e.g. LangSmith, of each call), so each run gets its own record of calls.
"""

from __future__ import annotations

import os
from pathlib import Path

from consilium.errors import ConsiliumError, UserError
from consilium.models.backends.registry import BUILTIN_BACKENDS, SPEC_HELP, Backend, resolve_spec
from consilium.models.options import ModelOptions
from consilium.models.protocol import ChatModel
from consilium.models.refs import ModelRef
from consilium.models.wrappers import (
    AnswerCheckModel,
    CachedModel,
    ConcurrencyLimitedModel,
    RetryingModel,
    StructuredOutputModel,
)
from consilium.models.wrappers.masked import MaskedModel
from consilium.models.wrappers.priced import PricedModel
from consilium.models.wrappers.recording import CallRecorder, RecordingModel

__all__ = ["SPEC_HELP", "ModelOptions", "ModelRef", "build_model", "build_ref", "default_cache_path", "for_run",
           "open_backend", "shared_layers"]


def default_cache_path() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "consilium" / "responses.sqlite"


def _open(spec: str, options: ModelOptions) -> tuple[Backend, ChatModel]:
    backend, arg = resolve_spec(spec)
    backend.check_installed()
    if BUILTIN_BACKENDS.get(backend.prefix) is backend:
        return backend, backend.open(arg, options)  # the built-ins raise typed errors of their own
    try:
        return backend, backend.open(arg, options)
    except ConsiliumError:
        raise
    except Exception as exc:  # a plugin's opener failed in its own way: the plugin is named, no traceback
        raise UserError(f"backend plugin {backend.prefix!r}: could not open {arg!r}: "
                        f"{type(exc).__name__}: {exc}") from exc


def open_backend(spec: str, options: ModelOptions | None = None) -> ChatModel:
    """The bare backend named by ``spec``; raises :class:`UserError` for an unknown spec or a missing extra."""
    return _open(spec, options or ModelOptions())[1]


def build_model(spec: str, options: ModelOptions | None = None) -> ChatModel:
    """The backend with the shared layers; cached only where the backend allows it (not scripted or replay)."""
    options = options or ModelOptions()
    backend, model = _open(spec, options)
    return shared_layers(model, options, cacheable=backend.cacheable, spec=spec)


def shared_layers(model: ChatModel, options: ModelOptions, *, cacheable: bool = True,
                  spec: str | None = None) -> ChatModel:
    """A bare model (a backend, or a model object the API was given) in the shared layers. The response
    cache is left out where ``cacheable`` is False or the model says ``cacheable = False`` (a LangChain
    model without a stable identity); ``spec`` is what a price list's ``prices_spec`` is compared with."""
    cached = options.cache and cacheable and getattr(model, "cacheable", True) is not False
    model = ConcurrencyLimitedModel(model, options.max_concurrency)
    model = RetryingModel(MaskedModel(model), options.retry)  # answers masked as they come, before any layer holds one
    if cached:
        model = CachedModel(model, options.cache_path or default_cache_path())
    if options.prices is not None and options.prices_spec in (None, spec):
        model = PricedModel(model, options.prices)
    return model


def for_run(model: ChatModel, recorder: CallRecorder, *, max_repairs: int = 2, answer_retries: int = 2,
            accept_truncated: bool = False) -> ChatModel:
    """Per-run layers: every attempt is recorded; an empty or cut-off answer is asked again (at most
    ``answer_retries`` times, a cut-off one with twice the room) and then fails the stage; structured
    output is validated and repaired. Answers are masked before they are observed or recorded, also from
    a model object the API was given as it is (outside :func:`shared_layers`, which mask them)."""
    from consilium.models.wrappers.observed import ObservedModel  # LangChain on the first run, not at start-up

    checked = AnswerCheckModel(RecordingModel(ObservedModel(_masked(model)), recorder), retries=answer_retries,
                               accept_truncated=accept_truncated)
    return StructuredOutputModel(checked, max_repairs=max_repairs)


def _masked(model: ChatModel) -> ChatModel:
    """``model`` itself when a :class:`MaskedModel` is among its layers, else ``model`` in one."""
    layer: object = model
    while layer is not None:
        if isinstance(layer, MaskedModel):
            return model
        layer = getattr(layer, "inner", None)
    return MaskedModel(model)


def build_ref(ref: ModelRef, shared: ModelOptions) -> ChatModel:
    """The model a reference names (a spec, ``SPEC@BASE_URL``, a model config file: consilium/models/refs.py),
    with its own server, key and settings over ``shared``."""
    return build_model(ref.spec, ref.options(shared))
