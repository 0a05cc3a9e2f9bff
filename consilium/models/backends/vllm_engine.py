"""``vllm:MODEL``: vLLM's in-process offline engine, for GPU batch runs (optional extra).

vLLM is imported only here; without it the error names the extra. Schemas are
enforced by vLLM's structured-output (guided decoding) support.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from consilium.errors import UserError
from consilium.models.protocol import NO_STAGE_LIMITS
from consilium.models.types import ModelRequest, ModelResponse
from consilium.models.usage import Usage

__all__ = ["VLLMModel"]


def _structured_params(vllm: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """vLLM renamed guided decoding to structured outputs; support both spellings."""
    sampling_params = vllm.sampling_params
    if hasattr(sampling_params, "StructuredOutputsParams"):
        return {"structured_outputs": sampling_params.StructuredOutputsParams(json=schema)}
    return {"guided_decoding": sampling_params.GuidedDecodingParams(json=schema)}


class VLLMModel:
    supports_images = False  # images would need the model's multimodal processor; not wired here
    stage_max_tokens = NO_STAGE_LIMITS

    def __init__(self, model: str, **engine_args: Any) -> None:
        try:
            import vllm
        except ImportError as exc:
            raise UserError("vllm:MODEL needs the vllm extra: pip install 'consilium[vllm]'") from exc
        self._vllm = vllm
        self.model_id = model
        # Engine arguments (dtype, quantisation, …) change the answers: part of the cache identity.
        self.endpoint = "vllm:in-process" + (f":{json.dumps(engine_args, sort_keys=True, default=str)}"
                                             if engine_args else "")
        self._engine_args = engine_args
        self._llm: Any = None
        self._lock = threading.Lock()

    def _complete(self, request: ModelRequest) -> ModelResponse:
        vllm = self._vllm
        settings = request.settings
        extra: dict[str, Any] = {}
        if request.json_schema is not None:
            extra = _structured_params(vllm, request.json_schema)
        params = vllm.SamplingParams(temperature=settings.temperature, top_p=settings.top_p,
                                     max_tokens=settings.max_tokens, seed=settings.seed, **extra)
        with self._lock:
            if self._llm is None:
                self._llm = vllm.LLM(model=self.model_id, **self._engine_args)
            started = time.perf_counter()
            messages = [{"role": m.role, "content": m.content} for m in request.messages]
            outputs = self._llm.chat(messages, params, use_tqdm=False)
            latency_ms = (time.perf_counter() - started) * 1000
        out = outputs[0]
        completion = out.outputs[0]
        return ModelResponse(
            text=completion.text,
            usage=Usage(input_tokens=len(out.prompt_token_ids or []), output_tokens=len(completion.token_ids),
                        cached_tokens=int(getattr(out, "num_cached_tokens", 0) or 0), calls=1),
            latency_ms=latency_ms,
            model=self.model_id,
            finish_reason=completion.finish_reason,
        )

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await asyncio.to_thread(self._complete, request)

    async def aclose(self) -> None:
        self._llm = None
