"""A fake OpenAI-compatible chat server with a fixed latency, for the concurrency and replica benchmarks.

    python benchmarks/fakeserver.py --latency-ms 100 --rules rules.json   (prints "PORT <n>" when ready)
    python benchmarks/fakeserver.py ... --prefix-cache-blocks 4096          (simulates vLLM's prefix cache)

It stands in for a model server that answers every request in exactly
``--latency-ms`` however many requests are in flight (an ideal server), so
what the benchmark measures is consilium: how close its throughput comes to
that ideal. It runs as its own process on 127.0.0.1, speaks just enough
HTTP/1.1 (keep-alive, Content-Length bodies) for the openai client, and picks
each answer with substring rules on the last user message:
``[{"contains": ["...", ...], "json": {...}} | {"contains": [...], "response": "..."}]``,
the first rule whose substrings all occur answering.

With ``--schemas honour`` it stands in for a server that enforces ``response_format``: a request
carrying a JSON schema (``{"type": "json_schema", "json_schema": {"schema": …}}`` or llama.cpp's
``{"type": "json_object", "schema": …}``) is answered with the simplest value of that schema
(:func:`schema_instance`: each const, the first of each enum, every property), whatever the rules say;
``--schemas ignore`` (the default) answers by the rules alone, as a server that drops ``response_format``.

With ``--prefix-cache-blocks N`` it also simulates one vLLM replica's automatic prefix cache:
the prompt (each message as ``<|role|>``, its content, newlines between; tokenized with tiktoken's
cl100k_base as consilium counts tokens) is cut into 16-token blocks, each named by a hash chained
from the block before (so a block is found only after the same whole prefix). A request is served
from cache for its leading blocks already held, at most all but its last token (vLLM always
computes one), and reports ``usage.prompt_tokens_details.cached_tokens`` as vLLM does with
``--enable-prompt-tokens-details``. Blocks are cached when the answer is sent (a request that
arrives while another with the same prefix is still in prefill computes it again, as in vLLM)
and evicted least recently used beyond N blocks. ``GET /stats`` gives the server's own counts.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: vLLM's default KV-cache block size, in tokens.
BLOCK_TOKENS = 16


class PrefixCache:
    """One replica's prefix cache: chained block hashes in an LRU of ``capacity`` blocks."""

    def __init__(self, capacity: int, encode: Callable[[str], list[int]]) -> None:
        self.capacity, self.encode = capacity, encode
        self.blocks: OrderedDict[bytes, None] = OrderedDict()
        self.prompt_tokens = self.cached_tokens = 0

    def tokens(self, messages: list[dict[str, Any]]) -> list[int]:
        parts = []
        for m in messages:
            content = m.get("content")
            text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content or [])
            parts.append(f"<|{m.get('role')}|>\n{text}\n")
        return self.encode("".join(parts))

    @staticmethod
    def hashes(tokens: list[int]) -> list[bytes]:
        chain, out = b"", []
        for start in range(0, len(tokens) - BLOCK_TOKENS + 1, BLOCK_TOKENS):
            block = ",".join(map(str, tokens[start:start + BLOCK_TOKENS])).encode()
            chain = hashlib.blake2b(chain + block, digest_size=16).digest()
            out.append(chain)
        return out

    def lookup(self, tokens: list[int]) -> int:
        """The prompt tokens served from cache: the leading blocks held, never the prompt's last token."""
        hit = 0
        for digest in self.hashes(tokens[:-1]):
            if digest not in self.blocks:
                break
            self.blocks.move_to_end(digest)
            hit += 1
        self.prompt_tokens += len(tokens)
        self.cached_tokens += hit * BLOCK_TOKENS
        return hit * BLOCK_TOKENS

    def insert(self, tokens: list[int]) -> None:
        for digest in self.hashes(tokens):
            self.blocks[digest] = None
            self.blocks.move_to_end(digest)
        while len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)


def schema_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """The simplest value ``schema`` accepts, as a decoder held to it would write one: a const, an enum's
    first choice, an object with every property, a string of its least length (at least one character),
    a number at its minimum; the first branch of an anyOf / oneOf; a local ``$ref`` followed."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        return schema_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return schema_instance(schema[key][0], defs)
    kind = schema.get("type", "object")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object":
        return {name: schema_instance(sub, defs) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [schema_instance(schema.get("items", {}), defs) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return True if kind == "boolean" else None


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request's ``response_format`` asks to be held to (OpenAI's or llama.cpp's shape)."""
    found = body.get("response_format")
    if not isinstance(found, dict):
        return None
    if found.get("type") == "json_schema":
        return (found.get("json_schema") or {}).get("schema")
    return found.get("schema") if found.get("type") == "json_object" else None


def _answer(rules: list[dict[str, Any]], body: dict[str, Any], honour_schemas: bool = False) -> str:
    schema = _schema(body) if honour_schemas else None
    if schema is not None:
        return json.dumps(schema_instance(schema))
    users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
    last = users[-1] if users else ""
    text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last or [])
    for rule in rules:
        if all(s in text for s in rule["contains"]):
            return rule["response"] if "response" in rule else json.dumps(rule["json"])
    return "(no rule matched)"


def _completion(text: str, model: str, prompt_chars: int, prompt_tokens: int | None = None,
                cached_tokens: int | None = None) -> bytes:
    completion_tokens = max(1, len(text) // 4)
    prompt_tokens = max(1, prompt_chars // 4) if prompt_tokens is None else prompt_tokens
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return json.dumps({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": usage,
    }).encode()


class FakeServer:
    def __init__(self, rules: list[dict[str, Any]], latency_ms: float, prefix_cache: PrefixCache | None = None,
                 honour_schemas: bool = False) -> None:
        self.rules, self.latency_s = rules, latency_ms / 1000
        self.honour_schemas = honour_schemas
        self.prefix_cache = prefix_cache
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                started = time.perf_counter()
                status, data, computed = self.route(request_line, raw)
                # The fixed latency counts from the request's arrival, as a server's would.
                await asyncio.sleep(max(0.0, self.latency_s - (time.perf_counter() - started)))
                if computed and self.prefix_cache is not None:
                    self.prefix_cache.insert(computed)
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def route(self, request_line: str, raw: bytes) -> tuple[bytes, bytes, list[int]]:
        """The status, the body and the prompt's tokens to cache once answered (none without a cache)."""
        method, path, _ = request_line.split(" ", 2)
        if method == "GET" and path.endswith("/stats"):
            cache = self.prefix_cache
            return b"200 OK", json.dumps({"requests": self.requests,
                                          "prompt_tokens": cache.prompt_tokens if cache else None,
                                          "cached_tokens": cache.cached_tokens if cache else None}).encode(), []
        if method == "GET" and path.endswith("/models"):
            return b"200 OK", json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode(), []
        if method != "POST" or not path.endswith("/chat/completions"):
            return b"404 Not Found", b'{"error": {"message": "not found"}}', []
        self.requests += 1
        body = json.loads(raw)
        text, model = _answer(self.rules, body, self.honour_schemas), body.get("model", "fake")
        if self.prefix_cache is None:
            return b"200 OK", _completion(text, model, len(raw)), []
        tokens = self.prefix_cache.tokens(body.get("messages", []))
        cached = self.prefix_cache.lookup(tokens)
        return b"200 OK", _completion(text, model, len(raw), len(tokens), cached), tokens


async def serve(rules: list[dict[str, Any]], latency_ms: float, port: int, cache_blocks: int = 0,
                honour_schemas: bool = False) -> None:
    prefix_cache = None
    if cache_blocks > 0:
        from consilium.models.tokens import _encoding  # the project's tiktoken encoding, only when simulating

        encoding = _encoding()
        prefix_cache = PrefixCache(cache_blocks, lambda text: encoding.encode(text, disallowed_special=()))
    server = await asyncio.start_server(FakeServer(rules, latency_ms, prefix_cache, honour_schemas).handle,
                                        "127.0.0.1", port, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=Path, required=True, help="JSON list of answer rules")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--prefix-cache-blocks", type=int, default=0,
                        help="simulate vLLM's prefix cache with this many 16-token blocks (0: off)")
    parser.add_argument("--schemas", choices=("honour", "ignore"), default="ignore",
                        help="honour: answer a response_format schema with a value of it; ignore: the rules alone")
    args = parser.parse_args()
    try:
        import uvloop  # the fastest loop available: the server should add as little lag as it can

        loop_factory: Any = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(serve(json.loads(args.rules.read_text()), args.latency_ms, args.port,
                              args.prefix_cache_blocks, args.schemas == "honour"))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
