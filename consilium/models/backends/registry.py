"""The backends a model spec can name: the built-in ones and those that installed packages add.

Each backend is one :class:`Backend` declaration: its spec prefix (``scripted`` in
``scripted:FILE``), the name of its argument (None for a backend that takes none), whether its
answers may be kept in the response cache, the ``consilium`` extra it needs, if any, and a line of
help. Its ``open`` builds the bare model from the argument and :class:`ModelOptions`; it imports
the backend's module (and any optional SDK) only then.

A package adds a backend with an entry point in the group ``consilium.backends``, named by the
spec prefix and pointing at a :class:`Backend`::

    [project.entry-points."consilium.backends"]
    mine = "my_package.backend:BACKEND"

A plugin is loaded only when a spec names its prefix. A built-in prefix always means the built-in
backend: a plugin of the same name is never loaded, and a warning says it is ignored.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from consilium.errors import UserError
from consilium.log import get_logger
from consilium.models.options import ModelOptions
from consilium.models.protocol import ChatModel

__all__ = ["BUILTIN_BACKENDS", "ENTRY_POINT_GROUP", "SPEC_HELP", "Backend", "find_backend", "plugin_names",
           "resolve_spec"]

log = get_logger(__name__)

#: The entry-point group a package adds backends under.
ENTRY_POINT_GROUP = "consilium.backends"

#: How a backend is opened: the spec's argument ("" for a backend that takes none) and the options.
Opener = Callable[[str, ModelOptions], ChatModel]


@dataclass(frozen=True)
class Backend:
    """One backend, as a model spec names it."""

    prefix: str
    open: Opener
    help: str
    #: The argument's name in help (``FILE`` in ``scripted:FILE``); None: the spec is the prefix alone.
    argument: str | None = None
    #: Whether answers may be served from the response cache (not for test doubles that play a script
    #: or a trace: their answers are the file's, and a cached one would outlive an edit of it).
    cacheable: bool = True
    #: The ``consilium`` extra the backend needs, and the module whose absence means it is not installed.
    extra: str | None = None
    requires: str | None = None
    #: Whether the backend talks to a server at ``ModelOptions.base_url`` (with ``api_key``): only such a
    #: spec may be named with its own server, ``SPEC@BASE_URL`` (consilium/models/refs.py).
    served: bool = False

    def __post_init__(self) -> None:
        if not self.prefix or ":" in self.prefix:
            raise ValueError(f"a backend prefix must be a non-empty name without ':' (got {self.prefix!r})")
        if (self.extra is None) != (self.requires is None):
            raise ValueError(f"backend {self.prefix!r}: extra and requires go together")

    @property
    def usage(self) -> str:
        """The spec as help shows it: ``embedded``, ``gguf:PATH``."""
        return self.prefix if self.argument is None else f"{self.prefix}:{self.argument}"

    def check_installed(self) -> None:
        """Raise :class:`UserError` naming the extra to install when the backend's module is missing."""
        if self.requires is not None and importlib.util.find_spec(self.requires) is None:
            raise UserError(f"{self.usage} needs the {self.extra} extra: pip install 'consilium[{self.extra}]'")


def _open_embedded(arg: str, options: ModelOptions) -> ChatModel:
    from consilium.models.backends.llama import (
        EMBEDDED_MODEL_ID,
        EMBEDDED_STAGE_MAX_TOKENS,
        LlamaCppModel,
        embedded_model_path,
    )

    return LlamaCppModel(embedded_model_path(), model_id=EMBEDDED_MODEL_ID, n_ctx=options.n_ctx,
                         stage_max_tokens=EMBEDDED_STAGE_MAX_TOKENS)


def _open_gguf(arg: str, options: ModelOptions) -> ChatModel:
    from consilium.models.backends.llama import LlamaCppModel

    return LlamaCppModel(arg, n_ctx=options.n_ctx)


def _open_openai(arg: str, options: ModelOptions) -> ChatModel:
    from consilium.models.backends.openai_compat import OpenAICompatModel
    from consilium.models.wrappers.pool import PooledModel

    # Several comma-separated base URLs: replicas of one model, calls spread over them.
    urls: list[str | None] = [u.strip() for u in (options.base_url or "").split(",") if u.strip()] or [None]
    replicas: list[ChatModel] = [
        OpenAICompatModel(arg, base_url=url, api_key=options.api_key, dialect=options.schema_dialect,
                          timeout_s=options.timeout_s, http_client=options.http_client,
                          token_param=options.token_param, omit_settings=options.omit_settings) for url in urls]
    return replicas[0] if len(replicas) == 1 else PooledModel(replicas)


def _open_vllm(arg: str, options: ModelOptions) -> ChatModel:
    from consilium.models.backends.vllm_engine import VLLMModel

    return VLLMModel(arg)


def _open_langchain(arg: str, options: ModelOptions) -> ChatModel:
    from consilium.models.backends.langchain_chat import load_chat_model

    return load_chat_model(arg)


def _open_scripted(arg: str, options: ModelOptions) -> ChatModel:
    from consilium.models.backends.scripted import ScriptedModel

    return ScriptedModel.from_file(arg)


def _open_replay(arg: str, options: ModelOptions) -> ChatModel:
    from consilium.models.backends.replay import ReplayModel

    return ReplayModel.from_trace(arg)


#: The built-in backends, in the order help lists them.
BUILTIN_BACKENDS: Mapping[str, Backend] = {b.prefix: b for b in (
    Backend("embedded", _open_embedded, "the bundled SmolLM2-135M on llama.cpp, offline"),
    Backend("gguf", _open_gguf, "a local GGUF file on llama.cpp", argument="PATH"),
    Backend("openai", _open_openai, "an OpenAI-compatible chat server (--base-url, OPENAI_API_KEY)",
            argument="MODEL", served=True),
    Backend("vllm", _open_vllm, "vLLM's async engine in this process (GPU)", argument="MODEL",
            extra="vllm", requires="vllm"),
    Backend("langchain", _open_langchain, "the LangChain chat model a function in an importable module returns",
            argument="MODULE:FACTORY"),
    Backend("scripted", _open_scripted, "answers from a script file, for tests and demos", argument="FILE",
            cacheable=False),
    Backend("replay", _open_replay, "the answers recorded in a trace", argument="TRACE", cacheable=False),
)}

#: The built-in specs, for help and errors.
SPEC_HELP = ", ".join(b.usage for b in list(BUILTIN_BACKENDS.values())[:-1]) + \
    f" or {list(BUILTIN_BACKENDS.values())[-1].usage}"

_warned: set[str] = set()


def _entry_points(prefix: str) -> list[EntryPoint]:
    return [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == prefix]


def plugin_names() -> list[str]:
    """The prefixes installed packages add (built-in ones excluded), without loading any plugin."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)} - set(BUILTIN_BACKENDS))


def _where(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else None
    return f"{ep.value}" + (f" from {dist}" if dist else "")


def _load(ep: EntryPoint) -> Backend:
    name = f"backend plugin {ep.name!r} ({_where(ep)})"
    try:
        declared = ep.load()
    except Exception as exc:  # a plugin may fail to import in any way; the user must know which one
        raise UserError(f"{name}: could not be loaded: {type(exc).__name__}: {exc}") from exc
    if not isinstance(declared, Backend):
        raise UserError(f"{name}: {ep.value} is not a consilium Backend (it is a {type(declared).__name__})")
    if declared.prefix != ep.name:
        raise UserError(f"{name}: declares the prefix {declared.prefix!r}; the entry point's name must be it")
    return declared


def find_backend(prefix: str) -> Backend | None:
    """The backend for ``prefix``: the built-in one, else an installed plugin's; None if there is none."""
    found = _entry_points(prefix)
    builtin = BUILTIN_BACKENDS.get(prefix)
    if builtin is not None:
        if found and prefix not in _warned:
            _warned.add(prefix)
            log.warning("backend_plugin_ignored", prefix=prefix, plugins=[_where(ep) for ep in found],
                        reason="a built-in backend has this prefix")
        return builtin
    if not found:
        return None
    if len(found) > 1:
        raise UserError(f"backend plugin {prefix!r}: more than one installed package adds it "
                        f"({'; '.join(_where(ep) for ep in found)})")
    return _load(found[0])


def resolve_spec(spec: str) -> tuple[Backend, str]:
    """The backend a spec names and the spec's argument; :class:`UserError` for an unknown spec."""
    prefix, _, arg = spec.partition(":")
    backend = find_backend(prefix)
    if backend is None or (backend.argument is None) != (not arg):
        plugins = plugin_names()
        also = f"; installed backend plugins: {', '.join(plugins)}" if plugins else ""
        raise UserError(f"unknown model spec {spec!r} (expected {SPEC_HELP}{also})")
    return backend, arg
