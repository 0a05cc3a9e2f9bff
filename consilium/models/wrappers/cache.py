"""A content-addressed response cache in SQLite.

The key holds everything that reaches the model: the model id, the endpoint
(where and how it is served: base URL and schema dialect, a GGUF file's path,
size and modification time, sampling penalties), the request (messages,
settings, schema and its name) and the bytes of every image sent. Only
complete answers (wrappers/answers.py) that satisfy their schema are stored,
and a stored answer is checked again before it is served, so an empty, cut-off
or invalid answer never outlives the call that got it. Hits come back with
``cached=True`` and the usage the original call reported.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from consilium.models.answers import answer_problem
from consilium.models.images import image_digest
from consilium.models.protocol import ChatModel
from consilium.models.recording import request_hash
from consilium.models.structured import OutputInvalid
from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["CACHE_KEY_VERSION", "CachedModel", "cache_key"]

#: Part of every key: a change to what the key covers makes old entries unreachable, never wrong.
CACHE_KEY_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(model_id: str, endpoint: str, request: ModelRequest) -> str:
    schema = request.output_schema
    images = [image_digest(path) for message in request.messages for path in message.images]
    blob = json.dumps([CACHE_KEY_VERSION, model_id, endpoint, request_hash(request),
                       schema.name if schema else None, images], separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _usable(request: ModelRequest, response: ModelResponse) -> bool:
    """A complete answer that meets the request's schema, if it has one."""
    if answer_problem(response) is not None:
        return False
    schema = request.output_schema
    if schema is not None:
        try:
            schema.validate(response.text)
        except OutputInvalid:
            return False
    return True


class CachedModel:
    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.endpoint = inner.endpoint
        self.supports_images = inner.supports_images
        self.stage_max_tokens = inner.stage_max_tokens
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        self.hits = 0
        self.misses = 0

    def _get(self, key: str) -> ModelResponse | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return ModelResponse.model_validate_json(row[0]) if row else None

    def _put(self, key: str, response: ModelResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created_at) VALUES (?, ?, ?, ?)",
                (key, response.model, response.model_dump_json(), time.time()),
            )
            self._db.commit()

    async def generate(self, request: ModelRequest) -> ModelResponse:
        key = cache_key(self.model_id, self.endpoint, request)
        hit = self._get(key)
        if hit is not None and _usable(request, hit):
            self.hits += 1
            return hit.model_copy(update={"cached": True, "latency_ms": 0.0})
        self.misses += 1
        response = await self.inner.generate(request)
        if _usable(request, response):
            self._put(key, response)
        return response

    async def aclose(self) -> None:
        with self._lock:
            self._db.close()
        await self.inner.aclose()
