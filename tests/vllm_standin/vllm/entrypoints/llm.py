"""``LLM``: the offline entry point (``LLM.chat``), which the backend used before the async engine.

Kept so a test can show the difference: each ``chat`` decodes its one conversation on the calling
thread, step by step, and counts the conversations running at once the way ``AsyncLLM`` does.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from vllm import _standin
from vllm.outputs import CompletionOutput, RequestOutput
from vllm.sampling_params import SamplingParams
from vllm.v1.engine.async_llm import StandinTokenizer


class LLM:
    def __init__(self, model: str, **engine_args: Any) -> None:
        self.model = model
        self.tokenizer = StandinTokenizer()
        self.running = 0
        self.max_running = 0
        self.requests: list[tuple[str, dict[str, Any], SamplingParams]] = []
        self._lock = threading.Lock()
        _standin.script.engines.append(self)

    def chat(self, messages: list[dict[str, str]], sampling_params: SamplingParams,
             use_tqdm: bool = True) -> list[RequestOutput]:
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = self.tokenizer.encode(str(text), add_special_tokens=False)
        with self._lock:
            self.requests.append((f"chat-{len(self.requests)}", {"prompt_token_ids": ids}, sampling_params))
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            answer = self.tokenizer.encode(_standin.script.responder(self.tokenizer.decode(ids), sampling_params),
                                           add_special_tokens=False)[:sampling_params.max_tokens]
            for _ in range(0, len(answer), _standin.script.tokens_per_step):
                time.sleep(_standin.script.step_s)
        finally:
            with self._lock:
                self.running -= 1
        completion = CompletionOutput(index=0, text=self.tokenizer.decode(answer), token_ids=answer,
                                      finish_reason="stop")
        return [RequestOutput(request_id="chat", prompt=None, prompt_token_ids=ids, prompt_logprobs=None,
                              outputs=[completion], finished=True, num_cached_tokens=0)]
