"""How the ``openai:`` backend sends a request: one POST of a JSON body, answered by status, headers, body.

Two transports speak the same OpenAI chat-completions wire format:

* ``aiohttp`` (the default): a pooled aiohttp session posting the body as is.
  It costs about 0.35 ms of CPU per call, against about 1.1 ms through the
  openai SDK's raw ``post`` (and 3 ms through ``chat.completions.create``,
  whose typed request transform walks every message and schema). One
  process then keeps a server busy at 64 calls in flight on two cores
  (benchmarks/results.md, section 2) — the same choice vLLM's own serving
  benchmark makes.
* ``sdk``: the official openai SDK client, for what it adds (its proxy, TLS
  and header handling, Azure-style gateways).

A transport raises :class:`TimeoutError` when the request timed out and
:class:`ConnectionError` when the connection failed or broke; every HTTP
answer, error statuses included, is returned for the backend to classify.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Mapping
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

from consilium.errors import UserError
from consilium.redact import register_secret

__all__ = ["HTTP_CLIENTS", "AiohttpTransport", "HttpClient", "HttpReply", "SdkTransport", "Transport", "open_transport"]

HttpClient = Literal["aiohttp", "sdk"]
HTTP_CLIENTS: tuple[str, ...] = ("aiohttp", "sdk")

HttpReply = tuple[int, Mapping[str, str], bytes]

#: The key sent to a local server when none is set (local servers accept any key).
LOCAL_KEY = "not-needed"


class Transport(Protocol):
    async def post(self, path: str, body: dict[str, Any], timeout_s: float) -> HttpReply: ...

    async def aclose(self) -> None: ...


def _user_agent() -> str:
    from importlib import metadata

    try:
        return f"consilium/{metadata.version('consilium')}"
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "consilium"


def _env_proxy(url: str) -> str | None:
    """The proxy $HTTPS_PROXY / $HTTP_PROXY names for ``url``, unless $NO_PROXY exempts its host."""
    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class AiohttpTransport:
    """One aiohttp session per event loop (a session cannot outlive the loop it was made in)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        import base64

        parts = urlsplit(base_url)
        authorization = f"Bearer {api_key}"
        if parts.username is not None:
            # user:password@ in the URL is HTTP Basic auth (a gateway in front of a local server). It takes
            # the Authorization header, so it cannot travel with a real API key.
            if api_key != LOCAL_KEY:
                raise UserError("--base-url: a URL with user:password@ takes the Authorization header, which "
                                "the API key needs; unset OPENAI_API_KEY for a server behind Basic auth")
            login = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            authorization = "Basic " + base64.b64encode(login).decode("ascii")
            host = parts.hostname or ""
            netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
            base_url = urlunsplit(parts._replace(netloc=netloc))
        # Masked wherever a server's echo of it could go: the value, its token, a Basic login decoded.
        register_secret(authorization)
        self.base_url = base_url.rstrip("/")
        # The proxy from the environment, looked up once: aiohttp's trust_env looks it up (and
        # ~/.netrc) in a worker thread on every request.
        self._proxy = _env_proxy(self.base_url)
        self._headers = {"Authorization": authorization, "Content-Type": "application/json",
                         "Accept": "application/json", "User-Agent": _user_agent()}
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _open(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # limit=0: no cap here; the concurrency-limit wrapper bounds the calls in flight.
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
            self._loop = loop
        return self._session

    async def post(self, path: str, body: dict[str, Any], timeout_s: float) -> HttpReply:
        import aiohttp

        session = self._open()
        try:
            async with session.post(self.base_url + path, data=json.dumps(body).encode(), proxy=self._proxy,
                                    timeout=aiohttp.ClientTimeout(total=timeout_s)) as response:
                return response.status, response.headers, await response.read()
        except TimeoutError:  # aiohttp's timeouts subclass TimeoutError (and asyncio.TimeoutError)
            raise
        except aiohttp.ClientError as exc:
            raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None


class SdkTransport:
    """The openai SDK's client, through its documented raw ``post`` (no typed transform of the body)."""

    def __init__(self, base_url: str | None, api_key: str, timeout_s: float) -> None:
        import openai

        self._openai = openai
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s)

    async def post(self, path: str, body: dict[str, Any], timeout_s: float) -> HttpReply:
        openai = self._openai
        try:
            raw = await self._client.post(path, body=body, cast_to=bytes, options={"timeout": timeout_s})
        except openai.APITimeoutError as exc:
            raise TimeoutError(str(exc)) from exc
        except openai.APIConnectionError as exc:
            raise ConnectionError(str(exc)) from exc
        except openai.APIStatusError as exc:
            return exc.status_code, exc.response.headers, exc.response.content
        return 200, {}, raw

    async def aclose(self) -> None:
        await self._client.close()


def open_transport(kind: str, base_url: str | None, api_key: str, timeout_s: float) -> Transport:
    if kind == "aiohttp":
        return AiohttpTransport(base_url or "https://api.openai.com/v1", api_key)
    if kind == "sdk":
        return SdkTransport(base_url, api_key, timeout_s)
    raise UserError(f"unknown HTTP client {kind!r} (expected one of {', '.join(HTTP_CLIENTS)})")
