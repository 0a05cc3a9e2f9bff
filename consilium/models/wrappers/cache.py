"""A content-addressed response cache in SQLite.

The key is a SHA-256 of the model id, the endpoint (base URL), the messages,
the settings and the schema, so a change to any of them misses. Only
responses that satisfy their schema are stored, so an invalid answer is never
served forever. Hits come back with ``cached=True`` and the usage the original
call reported.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from consilium.models.protocol import ChatModel
from consilium.models.recording import request_hash
from consilium.models.structured import OutputInvalid
from consilium.models.types import ModelRequest, ModelResponse

__all__ = ["CachedModel", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(model_id: str, endpoint: str, request: ModelRequest) -> str:
    blob = json.dumps([model_id, endpoint, request_hash(request)], separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedModel:
    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.endpoint = inner.endpoint
        self.supports_images = inner.supports_images
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
        if hit is not None:
            self.hits += 1
            return hit.model_copy(update={"cached": True, "latency_ms": 0.0})
        self.misses += 1
        response = await self.inner.generate(request)
        schema = request.output_schema
        try:
            if schema is not None:
                schema.validate(response.text)
        except OutputInvalid:
            return response
        self._put(key, response)
        return response

    async def aclose(self) -> None:
        with self._lock:
            self._db.close()
        await self.inner.aclose()
