"""A content-addressed response cache in SQLite.

The key holds everything that reaches the model: the model id, the endpoint
(where and how it is served: base URL and schema dialect, a GGUF file's path,
size and modification time, sampling penalties), the request (messages,
settings, schema and its name) and the bytes of every image sent. Only
complete answers (wrappers/answers.py) that satisfy their schema are stored,
and a stored answer is checked again before it is served, so an empty, cut-off
or invalid answer never outlives the call that got it. Hits come back with
``cached=True`` and the usage the original call reported.

No secret is stored: an answer is written with every known key and URL credential masked (the shared
stack masks answers before they reach the cache, wrappers/masked.py; this layer masks again for a model
wrapped without it), and an entry read back is masked too (one written before masking was done). A hit is
therefore the masked answer, the same text the run's trace holds (docs/reliability.md, "Secrets").

Writes never run on the event loop: a miss's answer is queued for a writer
thread, which commits whatever has queued up in one transaction (WAL,
``synchronous=NORMAL``), and is served from memory until then. :meth:`CachedModel.flush`
waits for every queued write; ``aclose`` flushes before it closes. A crash loses at
most the writes not yet committed; WAL never leaves the file corrupt.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from consilium.log import get_logger
from consilium.models.answers import answer_problem
from consilium.models.images import image_digest
from consilium.models.protocol import ChatModel
from consilium.models.structured import OutputInvalid
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.wrappers.base import WrapperModel
from consilium.models.wrappers.masked import mask_response
from consilium.models.wrappers.recording import request_hash

__all__ = ["CACHE_KEY_VERSION", "CachedModel", "cache_key"]

log = get_logger(__name__)

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


_INSERT = "INSERT OR REPLACE INTO responses (key, model, response, created_at) VALUES (?, ?, ?, ?)"
_Row = tuple[str, str, str, float]


class _Writer(threading.Thread):
    """Commits queued rows off the event loop: each transaction takes every row queued so far, so a
    burst of misses costs one commit. ``None`` in the queue ends the thread once the rows before it are in."""

    def __init__(self, path: Path, committed: Callable[[list[str]], None]) -> None:
        super().__init__(name=f"consilium-cache-writer:{path.name}", daemon=True)
        self.path = path
        self.committed = committed
        self.rows: queue.Queue[_Row | None] = queue.Queue()
        #: Rows that could not be written (logged as ``cache_write_failed``; the calls were answered).
        self.failed = 0

    def run(self) -> None:
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(self.path, timeout=30)
            db.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable on commit, never corrupt
        except sqlite3.Error as exc:
            log.warning("cache_write_failed", path=str(self.path), rows=0, error=str(exc))
        stop = False
        while not stop:  # every row is marked done, written or not, so that flush never waits forever
            batch = [self.rows.get()]
            while True:
                try:
                    batch.append(self.rows.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            rows = [row for row in batch if row is not None]
            if rows:
                self._commit(db, rows)
            for _ in batch:
                self.rows.task_done()
        if db is not None:
            db.close()

    def _commit(self, db: sqlite3.Connection | None, rows: list[_Row]) -> None:
        try:
            if db is None:
                raise sqlite3.OperationalError("the cache file could not be opened for writing")
            with db:  # one transaction: committed, or rolled back whole
                db.executemany(_INSERT, rows)
        except sqlite3.Error as exc:
            # The answers were returned and are in the traces; only their reuse is lost. Said, not hidden.
            self.failed += len(rows)
            log.warning("cache_write_failed", path=str(self.path), rows=len(rows), error=str(exc))
        self.committed([row[0] for row in rows])


class CachedModel(WrapperModel):
    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        #: Answers queued for the writer and not yet committed, served from here meanwhile.
        self._pending: dict[str, ModelResponse] = {}
        self._writer = _Writer(self.path, self._committed)
        self._writer.start()
        self._closed = False
        # A process that ends without aclose (a crash aside) still writes what it queued.
        atexit.register(self._flush_now)
        self.hits = 0
        self.misses = 0

    @property
    def write_failures(self) -> int:
        """Rows the writer could not store (each logged)."""
        return self._writer.failed

    def _committed(self, keys: list[str]) -> None:
        with self._lock:
            for key in keys:
                self._pending.pop(key, None)

    def _get(self, key: str) -> ModelResponse | None:
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None:
                return pending
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return mask_response(ModelResponse.model_validate_json(row[0])) if row else None

    def _put(self, key: str, response: ModelResponse) -> None:
        """Queue the answer, masked, for the writer thread; it never waits for a commit."""
        response = mask_response(response)
        with self._lock:
            self._pending[key] = response
        self._writer.rows.put((key, response.model, response.model_dump_json(), time.time()))

    def _flush_now(self) -> None:
        if self._writer.is_alive():
            self._writer.rows.join()

    async def flush(self) -> None:
        """Wait until every answer queued so far is committed (or its failure logged)."""
        await asyncio.to_thread(self._writer.rows.join)

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
        """Flush every queued write, stop the writer, close the file, then the inner model."""
        if not self._closed:
            self._closed = True
            self._writer.rows.put(None)
            await asyncio.to_thread(self._writer.join)
            atexit.unregister(self._flush_now)
            with self._lock:
                self._db.close()
        await super().aclose()
