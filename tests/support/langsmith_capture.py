"""LangSmith's API as a capture server on 127.0.0.1, for tests that trace runs to it: what the langsmith
client sends (every body, and the runs merged by id), with LangSmith's environment pointed at it for the
time of the block."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import langsmith.run_trees
import langsmith.utils
import pytest
from langchain_core.tracers.langchain import wait_for_all_tracers

__all__ = ["API_KEY", "Capture", "langsmith_capture"]

#: The LangSmith key the capture's environment holds: it must be in no payload.
API_KEY = "lsv2_pt_fake-key-that-must-never-leave-0123456789"


class Capture(BaseHTTPRequestHandler):
    """What the langsmith client sends: GET /info, then POST /runs/batch (``post`` and ``patch`` lists; this
    server's /info turns the multipart endpoint off), or single POST /runs and PATCH /runs/{id}."""

    bodies: list[bytes]
    runs: dict[str, dict[str, Any]]
    paths: list[str]
    multipart = False  # what /info says of the multipart endpoint (real LangSmith: on)
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            data = gzip.decompress(data)
        with self.lock:
            self.bodies.append(data)
            self.paths.append(self.path)
        return data

    def _merge(self, run: dict[str, Any]) -> None:
        with self.lock:
            self.runs.setdefault(str(run["id"]), {}).update(run)

    def do_GET(self) -> None:
        if self.path.startswith("/info"):
            self._reply({"version": "capture", "batch_ingest_config": {
                "use_multipart_endpoint": self.multipart, "size_limit": 100, "size_limit_bytes": None,
                "scale_up_nthreads_limit": 1, "scale_up_qsize_trigger": 1000, "scale_down_nempty_trigger": 4}})
        else:
            self._reply({})

    def do_POST(self) -> None:
        data = self._body()
        if self.path.startswith("/runs/batch"):
            batch = json.loads(data)
            for run in [*batch.get("post", []), *batch.get("patch", [])]:
                self._merge(run)
        elif self.path.rstrip("/") == "/runs":
            self._merge(json.loads(data))
        self._reply({})

    def do_PATCH(self) -> None:
        data = self._body()
        run = json.loads(data)
        run.setdefault("id", self.path.rstrip("/").rsplit("/", 1)[-1])
        self._merge(run)
        self._reply({})


@contextmanager
def langsmith_capture(*, multipart: bool) -> Iterator[type[Capture]]:
    handler = type("Capture", (Capture,), {"bodies": [], "runs": {}, "paths": [], "multipart": multipart})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LANGSMITH_TRACING", "true")
        mp.setenv("LANGSMITH_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        mp.setenv("LANGSMITH_API_KEY", API_KEY)
        mp.setenv("LANGSMITH_PROJECT", "consilium-test")
        mp.setattr(langsmith.run_trees, "_CLIENT", None)  # a client of this endpoint, flushed by the test
        _forget_langsmith_environment()
        try:
            yield handler
        finally:
            wait_for_all_tracers()
    _forget_langsmith_environment()  # the environment is back: later tests must not read it as tracing
    server.shutdown()
    server.server_close()


def _forget_langsmith_environment() -> None:
    langsmith.utils.get_env_var.cache_clear()  # type: ignore[attr-defined]
    langsmith.utils.get_tracer_project.cache_clear()
