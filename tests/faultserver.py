"""A fault-injecting OpenAI-compatible server for reliability tests (127.0.0.1 only).

Answers come from a :class:`~consilium.models.backends.scripted.ScriptedModel` (rules matched on
the prompt), and each request suffers, at the configured rate and with a seeded random choice,
one fault: HTTP 500, 429 with Retry-After, a hang past the client's timeout, a connection dropped
mid-response, a malformed JSON body, well-formed content that violates the requested schema, or
a truncated output (``finish_reason: length``). It counts requests, faults by kind and answers.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from localserver import JsonHandler, serving

from consilium.models import CallTag, Message, ModelRequest
from consilium.models.backends.scripted import Script, ScriptedModel

FAULTS = ("http_500", "http_429", "hang", "drop_mid_response", "malformed_json", "schema_violation", "truncated")


class FaultServer:
    def __init__(self, script: Script, *, rate: float, seed: int = 0, hang_s: float = 1.5,
                 faults: tuple[str, ...] = FAULTS) -> None:
        self.model = ScriptedModel(script)
        self.rate, self.hang_s, self.faults = rate, hang_s, faults
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.requests = 0
        self.answered = 0
        self.injected: Counter[str] = Counter()
        self.base_url = ""

    def decide(self) -> str | None:
        with self.lock:
            self.requests += 1
            if self.rng.random() < self.rate:
                fault = self.rng.choice(self.faults)
                self.injected[fault] += 1
                return fault
            return None

    def answer(self, body: dict[str, Any]) -> str:
        # Answer the task as first asked (system + first user message), so a repair turn gets
        # the same kind of answer again.
        messages = tuple(Message(role=m["role"], content=m["content"] if isinstance(m["content"], str)
                                 else " ".join(p.get("text", "") for p in m["content"]))
                         for m in body.get("messages", [])[:2])
        request = ModelRequest(messages=messages, tag=CallTag(stage="served"))
        with self.lock:
            return asyncio.run(self.model.generate(request)).text


def _completion(text: str, model: str, finish: str = "stop") -> bytes:
    return json.dumps({"id": "chatcmpl-fault", "object": "chat.completion", "created": int(time.time()),
                       "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                    "finish_reason": finish}],
                       "usage": {"prompt_tokens": 50, "completion_tokens": max(1, len(text) // 4),
                                 "total_tokens": 50 + max(1, len(text) // 4)}}).encode()


def _handler(state: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            fault = state.decide()
            model = str(body.get("model", "fault"))
            error = json.dumps({"error": {"message": "injected", "type": "injected"}}).encode()
            if fault == "http_500":
                self.send_body(500, error)
            elif fault == "http_429":
                self.send_body(429, error, {"Retry-After": "0"})
            elif fault == "malformed_json":
                self.send_body(200, b"{this is not json")
            elif fault == "schema_violation":
                self.send_body(200, _completion('{"unexpected": true}', model))
            elif fault == "drop_mid_response":
                data = _completion(state.answer(body), model)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                if fault == "hang":
                    time.sleep(state.hang_s)
                text = state.answer(body)
                if fault == "truncated":
                    self.send_body(200, _completion(text[: max(1, len(text) // 2)], model, "length"))
                else:
                    with state.lock:
                        state.answered += 1
                    self.send_body(200, _completion(text, model))

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout) closes its end: expected here, not worth a traceback."""


@contextmanager
def fault_server(script: Script, *, rate: float, seed: int = 0, hang_s: float = 1.5) -> Iterator[FaultServer]:
    state = FaultServer(script, rate=rate, seed=seed, hang_s=hang_s)
    with serving(_QuietServer(("127.0.0.1", 0), _handler(state))) as url:
        state.base_url = url
        yield state
