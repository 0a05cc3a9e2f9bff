"""A fake OpenAI-compatible chat server with a fixed latency, for the concurrency benchmark.

    python benchmarks/fakeserver.py --latency-ms 100 --rules rules.json   (prints "PORT <n>" when ready)

It stands in for a model server that answers every request in exactly
``--latency-ms`` however many requests are in flight (an ideal server), so
what the benchmark measures is consilium: how close its throughput comes to
that ideal. It runs as its own process on 127.0.0.1, speaks just enough
HTTP/1.1 (keep-alive, Content-Length bodies) for the openai client, and picks
each answer with substring rules on the last user message:
``[{"contains": ["...", ...], "json": {...}} | {"contains": [...], "response": "..."}]``,
the first rule whose substrings all occur answering.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any


def _answer(rules: list[dict[str, Any]], body: dict[str, Any]) -> str:
    users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
    last = users[-1] if users else ""
    text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last or [])
    for rule in rules:
        if all(s in text for s in rule["contains"]):
            return rule["response"] if "response" in rule else json.dumps(rule["json"])
    return "(no rule matched)"


def _completion(text: str, model: str, prompt_chars: int) -> bytes:
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(text) // 4)
    return json.dumps({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }).encode()


class FakeServer:
    def __init__(self, rules: list[dict[str, Any]], latency_ms: float) -> None:
        self.rules, self.latency_s = rules, latency_ms / 1000
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                started = time.perf_counter()
                status, data = self.route(request_line, raw)
                # The fixed latency counts from the request's arrival, as a server's would.
                await asyncio.sleep(max(0.0, self.latency_s - (time.perf_counter() - started)))
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def route(self, request_line: str, raw: bytes) -> tuple[bytes, bytes]:
        method, path, _ = request_line.split(" ", 2)
        if method == "GET" and path.endswith("/models"):
            return b"200 OK", json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode()
        if method != "POST" or not path.endswith("/chat/completions"):
            return b"404 Not Found", b'{"error": {"message": "not found"}}'
        self.requests += 1
        body = json.loads(raw)
        return b"200 OK", _completion(_answer(self.rules, body), body.get("model", "fake"), len(raw))


async def serve(rules: list[dict[str, Any]], latency_ms: float, port: int) -> None:
    server = await asyncio.start_server(FakeServer(rules, latency_ms).handle, "127.0.0.1", port, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=Path, required=True, help="JSON list of answer rules")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        import uvloop  # the fastest loop available: the server should add as little lag as it can

        loop_factory: Any = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(serve(json.loads(args.rules.read_text()), args.latency_ms, args.port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
