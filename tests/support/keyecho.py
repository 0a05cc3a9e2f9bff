"""An OpenAI-compatible server on 127.0.0.1 that echoes the request's ``Authorization`` header, as a
misconfigured proxy or a careless server may: a secret coming back from outside, for the tests that check it
is masked wherever it goes (tests marked ``localhost``).

What it echoes (:func:`echo`): the header's value, its token (``Bearer TOKEN``, ``Basic TOKEN``) and, for
HTTP Basic, the decoded ``user:password`` and the password. By default every chat request is refused with
HTTP 400 and the echo in the error's message (after ``padding`` characters, so that a key can be put across
the place where an error message is cut); with ``answer=True`` every request is answered, with the echo inside
the answer: a structured consilium's answers (tests/support/langchain_fakes.py, by the schema's name) with the echo
in their free-text fields, any other schema's (a judge's) filled in with the echo in its strings, and a
free-form answer that ends with it.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.langchain_fakes import ANSWERS

__all__ = ["SECRET", "EchoServer", "echo", "echo_server", "key_echo_server"]

#: The API key the tests put in OPENAI_API_KEY; it must appear in no output.
SECRET = "sk-key-echo-secret-0123456789abcdef"
#: The fields of a structured answer the echo is added to (free text: never an enum or a label).
FREE_TEXT = ("justification", "reason", "summary", "final_conclusion", "clinical_data")


def echo(authorization: str) -> str:
    """What the server says it was sent: the header, its token, and a Basic login decoded."""
    said = [f"Authorization: {authorization}"]
    words = authorization.split()
    if len(words) == 2:
        said.append(f"token {words[1]}")
        if words[0] == "Basic":
            try:
                login = base64.b64decode(words[1]).decode()
            except (binascii.Error, UnicodeDecodeError):
                login = ""
            said += [f"login {login}", f"password {login.partition(':')[2]}"]
    return "(you sent " + "; ".join(said) + ")"


def _echoed(value: Any, said: str) -> Any:
    if isinstance(value, dict):
        return {k: (f"{v} {said}" if k in FREE_TEXT and isinstance(v, str) else _echoed(v, said))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_echoed(v, said) for v in value]
    return value


def _filled(schema: dict[str, Any], said: str) -> dict[str, Any]:
    """An answer to any other flat schema (a judge's): each enum its first value, each number the lowest
    it allows, each boolean true, each string ``said``."""
    answer: dict[str, Any] = {}
    for name, field in (schema.get("properties") or {}).items():
        kinds = {field.get("type"), *(option.get("type") for option in field.get("anyOf") or [])}
        if "enum" in field:
            answer[name] = field["enum"][0]
        elif kinds & {"integer", "number"}:
            answer[name] = field.get("minimum", 0)
        elif "boolean" in kinds:
            answer[name] = True
        else:
            answer[name] = f"text {said}"
    return answer


def _answer(body: dict[str, Any], said: str) -> str:
    """A structured consilium's answer for the request's schema, an answer filled in for any other schema,
    else free text, with ``said`` in it."""
    json_schema = (body.get("response_format") or {}).get("json_schema") or {}
    name = json_schema.get("name")
    if name in ANSWERS:
        return json.dumps(_echoed(ANSWERS[name], said))
    if json_schema.get("schema"):
        return json.dumps(_filled(json_schema["schema"], said))
    return f"Acute viral myocarditis is most likely; pericarditis is possible. {said}"


class EchoServer:
    """A running echo server: its base URL and how many answers carried the echo."""

    def __init__(self, *, answer: bool, padding: int, said: Callable[[str], str] = echo) -> None:
        self.answer, self.padding, self.said = answer, padding, said
        self.base_url = ""
        self.echoed = 0
        self.lock = threading.Lock()


def _handler(state: EchoServer) -> type[BaseHTTPRequestHandler]:
    class Echo(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            said = state.said(self.headers.get("Authorization") or "")
            with state.lock:
                state.echoed += 1
            if state.answer:
                text = _answer(body, said)
                status, payload = 200, {
                    "id": "chatcmpl-echo", "object": "chat.completion", "created": int(time.time()),
                    "model": str(body.get("model", "echo")),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}}
            else:
                status, payload = 400, {"error": {"message": "x" * state.padding + f"bad request {said}"}}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Echo


@contextmanager
def echo_server(*, answer: bool = False, padding: int = 0,
                said: Callable[[str], str] = echo) -> Iterator[EchoServer]:
    """The server's state (``base_url``: ``http://127.0.0.1:PORT/v1``) while it runs; ``said`` makes what it
    echoes of the ``Authorization`` header (:func:`echo` by default)."""
    state = EchoServer(answer=answer, padding=padding, said=said)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def key_echo_server() -> Iterator[str]:
    """A server that refuses every request with the echo in its error: its base URL while it runs."""
    with echo_server() as state:
        yield state.base_url
