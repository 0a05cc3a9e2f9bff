"""A fault-injecting OpenAI-compatible server for reliability tests (127.0.0.1 only).

Answers come from a :class:`~consilium.models.backends.scripted.ScriptedModel` (rules matched on
the prompt), and each request suffers, at the configured rate and with a seeded random choice,
one fault: HTTP 500, 429 with Retry-After, a hang past the client's timeout, a connection dropped
mid-response, a malformed JSON body, well-formed content that violates the requested schema, a
truncated output (``finish_reason: length``), an empty answer (``content: null``, a
``tool_calls``-only answer, ``""``) or a body with wrong types (``"model": 123``,
``finish_reason: {}``, ``prompt_tokens: Infinity``, a lone surrogate, bytes that are not UTF-8).
``schedule`` names the first requests' behaviours in order (a fault, one of :data:`OTHER`, or None
for a plain answer) before the random choice takes over. It counts requests, faults by kind and
answers.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from consilium.models import CallTag, Message, ModelRequest
from consilium.models.backends.scripted import Script, ScriptedModel
from support.localserver import JsonHandler, serving

#: An answer that no result may be made of: retried, then a failed stage.
EMPTY_ANSWERS = ("content_null", "tool_calls_only", "empty_string")
#: A body whose fields have the wrong type or no valid text: a (retried) model error.
BAD_TYPES = ("model_not_string", "finish_reason_object", "tokens_infinity", "lone_surrogate", "invalid_utf8")
FAULTS = ("http_500", "http_429", "hang", "drop_mid_response", "malformed_json", "schema_violation", "truncated",
          *EMPTY_ANSWERS, *BAD_TYPES)
#: Not faults: a plain answer whose usage block is missing, or lacks its prompt_tokens.
OTHER = ("no_usage", "partial_usage")


class FaultServer:
    def __init__(self, script: Script, *, rate: float, seed: int = 0, hang_s: float = 1.5,
                 faults: Sequence[str] = FAULTS, schedule: Sequence[str | None] = ()) -> None:
        self.model = ScriptedModel(script)
        self.rate, self.hang_s, self.faults = rate, hang_s, tuple(faults)
        self.schedule = list(schedule)
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.requests = 0
        self.answered = 0
        self.injected: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.base_url = ""

    def decide(self, body: dict[str, Any]) -> str | None:
        with self.lock:
            self.requests += 1
            self.bodies.append(body)
            if self.schedule:
                fault = self.schedule.pop(0)
            elif self.rng.random() < self.rate:
                fault = self.rng.choice(self.faults)
            else:
                return None
            if fault is not None:
                self.injected[fault] += 1
            return fault

    def answer(self, body: dict[str, Any]) -> str:
        # Answer the task as first asked (system + first user message), so a repair turn gets
        # the same kind of answer again.
        messages = tuple(Message(role=m["role"], content=m["content"] if isinstance(m["content"], str)
                                 else " ".join(p.get("text", "") for p in m["content"]))
                         for m in body.get("messages", [])[:2])
        request = ModelRequest(messages=messages, tag=CallTag(stage="check"))  # the caller's stage is not sent
        with self.lock:
            return asyncio.run(self.model.generate(request)).text


def _completion_body(text: str | None, model: Any, finish: Any = "stop", *, usage: bool = True,
                     prompt_tokens: Any = 50, message: dict[str, Any] | None = None) -> dict[str, Any]:
    completion_tokens = max(1, len(text or "") // 4)
    body: dict[str, Any] = {
        "id": "chatcmpl-fault", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message or {"role": "assistant", "content": text},
                     "finish_reason": finish}]}
    if usage:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": 50 + completion_tokens}
    return body


def _completion(text: str, model: str, finish: str = "stop") -> bytes:
    return json.dumps(_completion_body(text, model, finish)).encode()


def faulty_body(fault: str, text: str, model: str) -> bytes:
    """The body of an empty answer, of a wrong-typed one, or of an answer without (full) usage."""
    if fault == "content_null":
        return json.dumps(_completion_body(None, model)).encode()
    if fault == "tool_calls_only":
        call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        return json.dumps(_completion_body(None, model, "tool_calls", message={
            "role": "assistant", "content": None, "tool_calls": [call]})).encode()
    if fault == "empty_string":
        return json.dumps(_completion_body("", model)).encode()
    if fault == "model_not_string":
        return json.dumps(_completion_body(text, 123)).encode()
    if fault == "finish_reason_object":
        return json.dumps(_completion_body(text, model, {})).encode()
    if fault == "tokens_infinity":
        return json.dumps(_completion_body(text, model, prompt_tokens=float("inf"))).encode()  # Infinity
    if fault == "lone_surrogate":
        return json.dumps(_completion_body(text + "\ud800", model)).encode()  # the escape \ud800
    if fault == "invalid_utf8":
        return json.dumps(_completion_body(text + "@@", model), ensure_ascii=False).encode().replace(b"@@", b"\xff")
    if fault == "no_usage":
        return json.dumps(_completion_body(text, model, usage=False)).encode()
    if fault == "partial_usage":
        body = _completion_body(text, model)
        del body["usage"]["prompt_tokens"]
        return json.dumps(body).encode()
    raise ValueError(f"unknown fault {fault!r}")


def _handler(state: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            fault = state.decide(body)
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
            elif fault in (*EMPTY_ANSWERS, *BAD_TYPES, *OTHER):
                text = state.answer(body)
                if fault in OTHER:
                    with state.lock:
                        state.answered += 1
                self.send_body(200, faulty_body(fault, text, model))
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
def fault_server(script: Script, *, rate: float, seed: int = 0, hang_s: float = 1.5,
                 faults: Sequence[str] = FAULTS, schedule: Sequence[str | None] = ()) -> Iterator[FaultServer]:
    state = FaultServer(script, rate=rate, seed=seed, hang_s=hang_s, faults=faults, schedule=schedule)
    with serving(_QuietServer(("127.0.0.1", 0), _handler(state))) as url:
        state.base_url = url
        yield state
