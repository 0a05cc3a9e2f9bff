"""A model named with where it lives, so that each judge of a jury may sit on its own server with its own key.

A reference (``--judge-model``, an experiment's ``judge_model``, the API's ``judge_model``) is one of:

* a **spec** (``openai:gpt-4o``): reached with the command's options (``--base-url``, ``$OPENAI_API_KEY``,
  ``--model-config``), as before;
* ``SPEC@BASE_URL`` or ``SPEC@BASE_URL#KEY_VAR``: a served spec (``openai:``) on its own server; its API key is
  ``$KEY_VAR``, and without ``#KEY_VAR`` none is sent: a key goes only to the server it was named for, never
  the command's ``$OPENAI_API_KEY`` to another server;
* a **model config file** (a path ending in ``.yaml``, ``.yml`` or ``.json``; docs/models.md): its spec with
  the file's settings. A file with a ``base_url`` is a model on its own server, whose key is
  ``$api_key_env`` (none without it); a file without one is reached as a spec is, with its settings.

A reference's ``name`` is the judge's identity as records show it (``JuryMember.judge``): the spec, or
``SPEC@BASE_URL`` for a model on its own server (credentials masked, never a key). Two references with the same
name are the same judge; the same model on two servers is two judges. ``record`` is what a manifest keeps to
build the model again (a config file by its absolute path, the key by its variable's name only).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from consilium.datafiles import load_data_file
from consilium.errors import UserError
from consilium.models.backends.registry import find_backend, resolve_spec
from consilium.models.config_file import ModelConfigFile, is_env_name
from consilium.models.options import ModelOptions
from consilium.redact import redact_url

__all__ = ["CONFIG_SUFFIXES", "ModelRef", "distinct", "held_to", "normal_url", "parse_model_ref", "parse_refs",
           "server_of"]

#: A path with one of these endings names a model config file, not a spec.
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")

#: ``SPEC@BASE_URL[#KEY_VAR]``: the URL starts at the first ``@`` followed by a scheme (a model name may
#: hold an ``@`` of its own, as ``claude-3-5-sonnet@20240620`` does).
_AT_SERVER = re.compile(r"^(?P<spec>.+?)@(?P<url>[A-Za-z][A-Za-z0-9+.-]*://[^#]*)(?:#(?P<key>.*))?$", re.DOTALL)
#: What after an ``@`` of a served spec means a server meant (a host, a port, a path): it must be a full URL.
_SERVERISH = re.compile(r"@[^@]*[/:.]")

#: Where a shown reference is cut: what follows a space, a comma, a query or a fragment may be a key pasted
#: by mistake, and an error never repeats it.
_UNSHOWN = re.compile(r"[\s,?#]")

_FORM = "SPEC@BASE_URL or SPEC@BASE_URL#KEY_VAR, e.g. openai:gpt-4o@http://127.0.0.1:8001/v1#JUDGE_KEY"


@dataclass(frozen=True)
class ModelRef:
    """A model and where it lives; :meth:`options` gives what its stack is built with."""

    spec: str
    #: Its own server (several comma-separated: replicas); None: the command's.
    base_url: str | None = None
    #: The variable holding its own server's key (None: no key is sent to that server).
    key_env: str | None = None
    #: The model config file it was named by, and the file's settings.
    path: Path | None = None
    config: ModelConfigFile | None = None
    #: Where it was named (``--judge-model``), for errors.
    flag: str = "--judge-model"

    @property
    def name(self) -> str:
        """The judge's identity: the spec, or ``SPEC@BASE_URL`` on its own server (credentials masked)."""
        return self.spec if self.base_url is None else f"{self.spec}@{redact_url(self.base_url)}"

    @property
    def record(self) -> str:
        """The reference as a manifest keeps it, to build the model again: no secret, a file's path absolute."""
        if self.path is not None:
            return str(self.path.resolve())
        if self.base_url is None:
            return self.spec
        return f"{self.spec}@{self.base_url}" + (f"#{self.key_env}" if self.key_env else "")

    def label(self, model_id: str) -> str:
        """``judge_model`` as a judgement records this judge: its model id, with its own server if it has one."""
        return model_id if self.base_url is None else f"{model_id}@{redact_url(self.base_url)}"

    def options(self, shared: ModelOptions) -> ModelOptions:
        """The command's options with what is this model's own: its server and key (never the command's key
        on its own server), and a config file's settings; the cache and retries stay the command's."""
        own: dict[str, object] = {}
        if self.config is not None:
            c = self.config
            own = {k: v for k, v in {"schema_dialect": c.schema_dialect, "http_client": c.http_client,
                                     "max_concurrency": c.max_concurrency, "timeout_s": c.timeout_s,
                                     "token_param": c.token_param,
                                     "omit_settings": tuple(c.omit_settings) if c.omit_settings is not None else None
                                     }.items() if v is not None}
            if c.prices is not None:
                own.update(prices=c.prices, prices_spec=self.spec)
        if self.base_url is not None:  # its own server: its own key or none, and unpriced unless its file says
            own = {"prices": None, "prices_spec": None, **own, "base_url": self.base_url, "api_key": None}
        if self.key_env is not None:
            key = os.environ.get(self.key_env)
            if not key:
                where = f"{self.path}: api_key_env" if self.path is not None else self.record
                raise UserError(f"{self.flag}: {where}: ${self.key_env} is not set")
            own["api_key"] = key
        return dataclasses.replace(shared, **own)  # type: ignore[arg-type]


def parse_model_ref(text: str, *, flag: str = "--judge-model", base: Path | None = None) -> ModelRef:
    """The reference ``text`` names (see the module's docstring); a malformed one is a :class:`UserError`
    naming ``flag``. A relative config file path is read against ``base`` (default: the working folder)."""
    if not text.strip():
        raise UserError(f"{flag}: an empty model spec")
    if ":" not in text and text.lower().endswith(CONFIG_SUFFIXES):
        return _from_file(Path(text) if base is None or Path(text).is_absolute() else base / text, flag)
    found = _AT_SERVER.match(text)
    if found is None:
        if (_SERVERISH.search(text) or "#" in text) and _is_served(text):
            raise UserError(f"{flag}: {_shown(text)!r}: a model on its own server is named {_FORM}")
        return ModelRef(spec=text, flag=flag)
    key = found["key"]
    if key is not None and not is_env_name(key):  # never repeat it: it may be a key pasted by mistake
        raise UserError(f"{flag}: {_shown(found['spec'] + '@' + found['url'])}: after '#' comes the name of the "
                        "environment variable holding the key (letters, digits and _), never the key itself")
    return ModelRef(spec=_served(found["spec"], flag), base_url=_url(found["url"], found["spec"], flag),
                    key_env=key, flag=flag)


def _shown(text: str) -> str:
    """A reference as an error repeats it: cut before anything that may be a key (:data:`_UNSHOWN`, marked
    ``…``), a URL's ``user:password@`` masked."""
    cut = _UNSHOWN.split(text, maxsplit=1)[0]
    return redact_url(cut) + ("…" if cut != text else "")


def _is_served(spec: str) -> bool:
    backend = find_backend(spec.partition(":")[0])
    return backend is not None and backend.served


def _served(spec: str, flag: str) -> str:
    try:
        backend, _ = resolve_spec(spec)
    except UserError as exc:
        raise UserError(f"{flag}: {exc}") from None
    if not backend.served:
        raise UserError(f"{flag}: {spec}: only a served model (openai:MODEL) can be named with a server "
                        f"({_FORM})")
    return spec


def _url(url: str, spec: str, flag: str) -> str:
    shown = f"{flag}: {_shown(f'{spec}@{url}')}"
    if not _reachable(url) or "," in url:
        raise UserError(f"{shown}: the server must be one http:// or https:// URL with a host ({_FORM})")
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None or parts.query:
        raise UserError(f"{shown}: no credentials or query in the URL; put the key in an environment variable "
                        "and name it after '#' (SPEC@BASE_URL#KEY_VAR)")
    return normal_url(url)


#: The port a scheme means when a URL names none.
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normal_url(url: str) -> str:
    """One server written one way, so that the same server is the same judge (and the same cache entries):
    the scheme and host lowercased, an IPv6 address in its short form, the scheme's default port and any
    trailing ``/`` left out; the path's case and any ``user:password@`` are kept. Several comma-separated
    URLs (replicas) each so. A URL that does not parse as one is only stripped of trailing ``/``."""
    if "," in url:
        return ",".join(normal_url(each.strip()) for each in url.split(","))
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        return url.rstrip("/")
    host = parts.hostname
    if not host or parts.scheme.lower() not in _DEFAULT_PORTS:
        return url.rstrip("/")
    try:
        host = f"[{ipaddress.IPv6Address(host).compressed}]" if ":" in host else host
    except ValueError:
        host = f"[{host}]"
    userinfo = parts.netloc.rpartition("@")[0]
    scheme = parts.scheme.lower()
    netloc = (f"{userinfo}@" if userinfo else "") + host + (f":{port}" if port not in (None, _DEFAULT_PORTS[scheme])
                                                              else "")
    rest = parts.path.rstrip("/") + (f"?{parts.query}" if parts.query else "")
    return f"{scheme}://{netloc}{rest}"


def _from_file(path: Path, flag: str) -> ModelRef:
    try:
        config = load_data_file(path, ModelConfigFile, "model config")
    except UserError as exc:
        raise UserError(f"{flag}: {exc}") from None
    url = config.base_urls
    for each in url.split(",") if url else []:  # a server no call could reach: refused now, not call by call
        if not _reachable(each.strip()):
            raise UserError(f"{flag}: {path}: base_url: {_shown(each.strip())!r} is not one http:// or https:// "
                            "URL with a host")
    return ModelRef(spec=config.spec, base_url=normal_url(url) if url else None, key_env=config.api_key_env,
                    path=path, config=config, flag=flag)


def _reachable(url: str) -> bool:
    """Whether ``url`` can name a server: http or https, a host, a port that is a number (a port such as ``:x9``
    is refused here, not at the first call), no space."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return False
    return parts.scheme.lower() in _DEFAULT_PORTS and bool(parts.hostname) and not any(c.isspace() for c in url)


def server_of(name: str) -> str | None:
    """The server in a judge's ``name`` (``SPEC@BASE_URL``), or None for a spec reached the command's way."""
    found = _AT_SERVER.match(name)
    return found["url"] if found else None


def distinct(refs: list[ModelRef], given: list[str], flag: str) -> None:
    """:class:`UserError` when two of ``refs`` are the same judge (a vote would count twice): the same spec
    on the same server, however each was named; the same model on two servers is two judges."""
    names = [ref.name for ref in refs]
    for i, name in enumerate(names):
        if name in names[:i]:
            first = given[names.index(name)]
            twice = f"{given[i]} given twice" if given[i] == first else \
                f"{first} and {given[i]} are the same judge ({name})"
            raise UserError(f"{flag}: {twice} (each judge of a jury once)")


def parse_refs(given: list[str], *, flag: str = "--judge-model", base: Path | None = None) -> list[ModelRef]:
    """Each of a jury's references, parsed; two that are the same judge are refused (:func:`distinct`)."""
    refs = [parse_model_ref(text, flag=flag, base=base) for text in given]
    distinct(refs, given, flag)
    return refs


def held_to(refs: list[ModelRef], names: list[str], where: str, remedy: str) -> None:
    """:class:`UserError` when one of a cohort's judges, built again from its record, is now another judge than
    the one ``names`` (each judge's name when the cohort started) says: a config file edited to name another
    server or model. The key's variable is not the judge: a file may change it. No ``names``: nothing to hold."""
    for ref, name in zip(refs, names, strict=False):
        if ref.name != name:
            raise UserError(f"{where}: {ref.record} now names {ref.name}, not the cohort's judge {name} ({remedy})")
