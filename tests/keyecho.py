"""An OpenAI-compatible server on 127.0.0.1 that refuses every chat request with HTTP 400 and a body that
echoes the request's Authorization header, as a misconfigured proxy may: a secret in a model's error, for
the tests that check it is masked wherever the error goes (tests marked ``localhost``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["SECRET", "key_echo_server"]

#: The API key the tests put in OPENAI_API_KEY; it must appear in no output.
SECRET = "sk-review18-echoed-secret-0123456789abcdef"


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        echoed = f"bad request (you sent Authorization: {self.headers.get('Authorization')})"
        data = json.dumps({"error": {"message": echoed}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def key_echo_server() -> Iterator[str]:
    """The server's base URL (``http://127.0.0.1:PORT/v1``) while it runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
