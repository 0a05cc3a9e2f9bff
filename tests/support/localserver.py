"""Local HTTP servers for tests marked ``localhost``.

* :func:`llama_server` runs llama-cpp-python's OpenAI-compatible server on a GGUF
  file as a subprocess on 127.0.0.1 and yields its base URL.
* :func:`scripted_server` runs a tiny in-process OpenAI-compatible server whose
  ``POST /v1/chat/completions`` follows a script, one behaviour per request:

  - ``("status", 500)`` or ``("status", 429, {"Retry-After": "0.3"})``: an error status
    (with extra headers);
  - ``("drop",)``: close the connection without sending any response;
  - ``("ok", "text")``: a valid ``chat.completion`` body with usage.

  A request beyond the end of the script gets HTTP 500 ("script exhausted").
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

__all__ = ["Behaviour", "ScriptedServer", "free_port", "llama_server", "scripted_server"]

HOST = "127.0.0.1"

Behaviour = (
    tuple[Literal["status"], int]
    | tuple[Literal["status"], int, dict[str, str]]
    | tuple[Literal["drop"]]
    | tuple[Literal["ok"], str]
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (nothing listens on it now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# --- llama-cpp-python's server ---------------------------------------------------------------


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _tail(log: Any, limit: int = 4000) -> str:
    log.flush()
    log.seek(0)
    text = str(log.read().decode("utf-8", errors="replace"))
    return text[-limit:]


@contextmanager
def llama_server(model_path: str | Path, *, n_ctx: int = 2048, startup_timeout_s: float = 60.0,
                 extra_args: Sequence[str] = ()) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` on ``model_path``; yield ``http://127.0.0.1:PORT/v1``."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
               "--host", HOST, "--port", str(port), "--n_ctx", str(n_ctx), *extra_args]
    base_url = f"http://{HOST}:{port}/v1"
    with tempfile.TemporaryFile() as log:
        # Output goes to a file, not a pipe: a full pipe would stall the server.
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + startup_timeout_s
            while not _answers(f"{base_url}/models"):
                if process.poll() is not None:
                    raise RuntimeError(f"llama_cpp.server exited with code {process.returncode} "
                                       f"before answering:\n{_tail(log)}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"llama_cpp.server did not answer GET /v1/models within "
                                       f"{startup_timeout_s:.0f} s:\n{_tail(log)}")
                time.sleep(0.2)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- the scripted server --------------------------------------------------------------------


def _completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


class ScriptedServer:
    """The state of a running scripted server: its URL, script and the requests it saw."""

    def __init__(self, behaviours: Sequence[Behaviour]) -> None:
        self.behaviours = list(behaviours)
        self.bodies: list[dict[str, Any]] = []
        self.base_url = ""
        self._lock = threading.Lock()

    @property
    def requests(self) -> int:
        """How many chat-completion requests arrived."""
        with self._lock:
            return len(self.bodies)

    def next_behaviour(self, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            index = len(self.bodies)
            self.bodies.append(body)
        if index < len(self.behaviours):
            return self.behaviours[index]
        return ("status", 500, {"X-Script": "exhausted"})


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers with a JSON body (the test servers' shared part)."""

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def send_body(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self.send_body(status, json.dumps(payload).encode("utf-8"), headers)


def _handler(state: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            body = json.loads(raw or b"{}")
            behaviour = state.next_behaviour(body)
            if behaviour[0] == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif behaviour[0] == "ok":
                self._send_json(200, _completion(behaviour[1], str(body.get("model", "scripted"))))
            else:
                status = behaviour[1]
                headers = behaviour[2] if len(behaviour) == 3 else {}
                self._send_json(status, {"error": {"message": f"scripted HTTP {status}", "type": "scripted"}},
                                headers)

    return Handler


@contextmanager
def serving(httpd: ThreadingHTTPServer) -> Iterator[str]:
    """Run ``httpd`` (bound to 127.0.0.1) in a daemon thread; yield its OpenAI-style base URL; stop it."""
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class QuietServer(ThreadingHTTPServer):
    """A client that gave up (a cancelled call, a timeout) closes its end mid-answer: expected in these
    tests, and not worth a traceback on the test's stderr (which the tests read)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@contextmanager
def scripted_server(behaviours: Sequence[Behaviour]) -> Iterator[ScriptedServer]:
    """Serve ``behaviours`` on 127.0.0.1 (a free port) in a thread; yield the server state."""
    state = ScriptedServer(behaviours)
    with serving(QuietServer((HOST, 0), _handler(state))) as url:
        state.base_url = url
        yield state
