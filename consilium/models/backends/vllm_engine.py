"""``vllm:MODEL``: vLLM's async engine in process, for GPU batch runs (optional extra).

Each call is one more sequence in the engine's running batch (continuous batching): there is no
lock, so every call a run or cohort has in flight (``--max-concurrency``) decodes together. The
chat template is applied with the engine's tokenizer, and a schema is enforced per request by
vLLM's structured outputs. vLLM is imported only here; without it the error names the extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import time
import uuid
from typing import Any

from consilium.errors import ConsiliumError, ModelError, TransientModelError, UserError
from consilium.models.protocol import NO_STAGE_LIMITS
from consilium.models.reasoning import split_reasoning
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.usage import Usage

__all__ = ["MIN_VLLM", "VLLMModel"]

#: The first release with both ``StructuredOutputsParams`` (the rename of guided decoding, vLLM PR
#: #22772) and the V1 ``AsyncLLM`` this backend drives; the ``vllm`` extra's floor in pyproject.toml.
MIN_VLLM = "0.10.2"

#: Finish reasons of a request the engine ended itself (aborted, or failed inside the engine).
_ENGINE_ENDED = ("abort", "error")


class VLLMModel:
    supports_images = False  # images would need the model's multimodal processor; not wired here
    stage_max_tokens = NO_STAGE_LIMITS
    enforces_schemas = True  # vLLM's structured outputs (guided decoding) hold each schema request to its schema

    def __init__(self, model: str, **engine_args: Any) -> None:
        try:
            import vllm
        except ImportError as exc:
            raise UserError("vllm:MODEL needs the vllm extra: pip install 'consilium[vllm]'") from exc
        try:
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.sampling_params import RequestOutputKind, SamplingParams, StructuredOutputsParams
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as exc:
            found = getattr(vllm, "__version__", "unknown")
            raise UserError(f"vllm:MODEL needs vLLM {MIN_VLLM} or later (found {found}): "
                            "pip install 'consilium[vllm]'") from exc
        self._async_llm: Any = AsyncLLM
        self._engine_args_cls: Any = AsyncEngineArgs
        self._sampling_params: Any = SamplingParams
        self._structured_outputs: Any = StructuredOutputsParams
        self._final_only: Any = RequestOutputKind.FINAL_ONLY
        self.model_id = model
        # Engine arguments (dtype, quantisation, …) change the answers: part of the cache identity.
        self.endpoint = "vllm:in-process" + (f":{json.dumps(engine_args, sort_keys=True, default=str)}"
                                             if engine_args else "")
        self._engine_args = engine_args
        self._engine: Any = None
        self._tokenizer: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._start_error: str | None = None  # why the engine did not start on this loop
        self._prefix = f"consilium-{uuid.uuid4().hex[:8]}"
        self._ids = itertools.count()

    async def _started(self) -> tuple[Any, Any]:
        """The engine and its tokenizer, started on the first call of this event loop."""
        loop = asyncio.get_running_loop()
        if self._engine is not None and self._loop is not loop:
            self._engine.shutdown()  # its output task lived on a loop that has ended
            self._engine = self._tokenizer = None
        if self._start_error is not None and self._loop is loop:
            raise ModelError(self._start_error)  # loading it again would fail the same way
        if self._engine is None:
            self._loop = loop
            args = self._engine_args_cls(model=self.model_id, **{"disable_log_stats": True, **self._engine_args})
            try:
                # Loads the weights while the loop waits, as vLLM's own server does; every call needs them.
                self._engine = self._async_llm.from_engine_args(args)
            except Exception as exc:
                self._start_error = f"vllm:{self.model_id}: the engine did not start: {type(exc).__name__}: {exc}"
                raise ModelError(self._start_error) from exc
            self._start_error = None
        engine = self._engine
        if self._tokenizer is None:
            tokenizer = engine.get_tokenizer()
            if inspect.isawaitable(tokenizer):  # a coroutine in older releases, a plain method in newer ones
                tokenizer = await tokenizer
            self._tokenizer = tokenizer
        return engine, self._tokenizer

    def _params(self, request: ModelRequest) -> Any:
        settings = request.settings
        extra: dict[str, Any] = {}
        if request.json_schema is not None:
            extra["structured_outputs"] = self._structured_outputs(json=request.json_schema)
        # FINAL_ONLY: the engine sends one output when the sequence ends, not one per decoded token.
        return self._sampling_params(temperature=settings.temperature, top_p=settings.top_p, seed=settings.seed,
                                     max_tokens=settings.max_tokens, output_kind=self._final_only, **extra)

    @staticmethod
    def _prompt(tokenizer: Any, request: ModelRequest) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        # The template writes the special tokens itself, so none are added (as vLLM's LLM.chat encodes it).
        return {"prompt_token_ids": list(tokenizer.encode(text, add_special_tokens=False))}

    async def generate(self, request: ModelRequest) -> ModelResponse:
        engine, tokenizer = await self._started()
        prompt = self._prompt(tokenizer, request)
        params = self._params(request)
        request_id = f"{self._prefix}-{next(self._ids)}"
        timeout_s = request.settings.timeout_s
        started = time.perf_counter()
        final: Any = None
        stream = engine.generate(prompt, params, request_id)
        try:
            async with asyncio.timeout(timeout_s):
                async for output in stream:
                    if output.finished:
                        final = output
        except TimeoutError as exc:
            raise TransientModelError(f"vLLM did not finish the request within {timeout_s:g} s") from exc
        except ConsiliumError:
            raise
        except Exception as exc:  # the engine refused or lost the request (prompt too long, engine dead, …)
            raise ModelError(f"vLLM: {type(exc).__name__}: {exc}") from exc
        finally:
            if final is None:  # cancelled, timed out or failed: the sequence leaves the batch
                with contextlib.suppress(Exception):
                    await stream.aclose()
                with contextlib.suppress(Exception):
                    await engine.abort(request_id)
        latency_ms = (time.perf_counter() - started) * 1000
        if final is None:
            raise ModelError("vLLM: the request ended without a final output")
        completion = final.outputs[0]
        finish = completion.finish_reason
        if finish in _ENGINE_ENDED:
            raise TransientModelError(f"vLLM ended the request (finish_reason {finish})")
        # A reasoning model's <think> block (DeepSeek-R1, Qwen3) stays out of the answer that is parsed and judged;
        # its tokens, a part of the output tokens, are the block's text counted with the engine's own tokenizer.
        thought, answer = split_reasoning(completion.text)
        output_tokens = len(completion.token_ids)
        thinking = min(len(tokenizer.encode(thought, add_special_tokens=False)), output_tokens) if thought else 0
        return ModelResponse(
            text=answer,
            usage=Usage(input_tokens=len(final.prompt_token_ids or prompt["prompt_token_ids"]),
                        output_tokens=output_tokens, reasoning_tokens=thinking,
                        cached_tokens=int(getattr(final, "num_cached_tokens", 0) or 0), calls=1),
            latency_ms=latency_ms,
            model=self.model_id,
            finish_reason=finish,
            reasoning=thought,
        )

    async def aclose(self) -> None:
        """Shut the engine down (its worker processes and GPU memory); a later call starts a new one."""
        engine, self._engine, self._tokenizer, self._start_error = self._engine, None, None, None
        if engine is not None:
            engine.shutdown()
