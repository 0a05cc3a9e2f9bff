"""``AsyncLLM``: an engine that runs a continuous batch the way vLLM's V1 async engine does.

``generate`` adds the request to the running batch at once and yields its outputs as the scheduler
steps; a background task is the scheduler, each step decoding ``tokens_per_step`` tokens of every
running sequence. The engine counts the most sequences running at once (``max_running``), records
every request, abort and shutdown, and keeps a prefix cache of 16-token blocks (chained hashes) so
``num_cached_tokens`` is what vLLM would report.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from vllm import _standin
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.outputs import CompletionOutput, RequestOutput
from vllm.sampling_params import RequestOutputKind, SamplingParams

BLOCK = 16
BOS = "<s>"
BOS_ID = 1
_SPECIAL = re.compile(re.escape(BOS))


class EngineDeadError(Exception):
    pass


class StandinTokenizer:
    """One token per character, plus ``<s>`` as one special token (id 1) that ``encode`` adds at the start."""

    def __init__(self) -> None:
        self.templated: list[list[dict[str, str]]] = []

    def apply_chat_template(self, conversation: list[dict[str, str]], *, add_generation_prompt: bool = False,
                            tokenize: bool = True, **kwargs: Any) -> str | list[int]:
        self.templated.append([dict(m) for m in conversation])
        text = BOS + "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in conversation)
        if add_generation_prompt:
            text += "<|assistant|>\n"
        return text if not tokenize else self.encode(text, add_special_tokens=False)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = [BOS_ID] if add_special_tokens else []
        for i, piece in enumerate(_SPECIAL.split(text)):
            if i:
                ids.append(BOS_ID)
            ids.extend(ord(c) + 2 for c in piece)
        return ids

    def decode(self, ids: list[int]) -> str:
        return "".join(BOS if i == BOS_ID else chr(i - 2) for i in ids)


@dataclass
class _Sequence:
    request_id: str
    prompt_ids: list[int]
    answer_ids: list[int]
    finish: str
    cached: int
    decoded: int = 0
    aborted: bool = False
    step: asyncio.Event = field(default_factory=asyncio.Event)


class AsyncLLM:
    def __init__(self, engine_args: AsyncEngineArgs) -> None:
        self.engine_args = engine_args
        self.tokenizer = StandinTokenizer()
        self.running: dict[str, _Sequence] = {}
        self.max_running = 0
        self.requests: list[tuple[str, dict[str, Any], SamplingParams]] = []
        self.aborted: list[str] = []
        self.shut_down = False
        self._blocks: set[int] = set()
        self._scheduler: asyncio.Task[None] | None = None
        _standin.script.engines.append(self)

    @classmethod
    def from_engine_args(cls, engine_args: AsyncEngineArgs, start_engine_loop: bool = True,
                         usage_context: Any = None, stat_loggers: Any = None) -> AsyncLLM:
        _standin.script.starts += 1
        if _standin.script.fail_start:
            raise RuntimeError(_standin.script.fail_start)
        return cls(engine_args)

    def get_tokenizer(self) -> Any:
        if _standin.script.async_get_tokenizer:
            return self._get_tokenizer_async()
        return self.tokenizer

    async def _get_tokenizer_async(self) -> StandinTokenizer:
        await asyncio.sleep(0)
        return self.tokenizer

    def _cached_tokens(self, ids: list[int]) -> int:
        """Full 16-token blocks of the prompt already in the cache (at least one token is always computed)."""
        cached, chained, hit = 0, 0, True
        for end in range(BLOCK, len(ids) + 1, BLOCK):
            chained = hash((chained, tuple(ids[end - BLOCK:end])))
            if hit and chained in self._blocks:
                cached = end
            else:
                hit = False
                self._blocks.add(chained)
        return min(cached, len(ids) - 1)

    async def generate(self, prompt: dict[str, Any] | str, sampling_params: SamplingParams, request_id: str,
                       **kwargs: Any) -> AsyncGenerator[RequestOutput, None]:
        if self.shut_down:
            raise EngineDeadError("the engine was shut down")
        if request_id in self.running:
            raise ValueError(f"Request id {request_id} already running.")
        ids = self.tokenizer.encode(prompt) if isinstance(prompt, str) else list(prompt["prompt_token_ids"])
        self.requests.append((request_id, prompt if isinstance(prompt, dict) else {"prompt": prompt},
                              sampling_params))
        answer = self.tokenizer.encode(_standin.script.responder(self.tokenizer.decode(ids), sampling_params),
                                       add_special_tokens=False)
        finish = "stop"
        if len(answer) > sampling_params.max_tokens:
            answer, finish = answer[:sampling_params.max_tokens], "length"
        seq = _Sequence(request_id, ids, answer, finish, self._cached_tokens(ids))
        self.running[request_id] = seq
        self.max_running = max(self.max_running, len(self.running))
        if self._scheduler is None or self._scheduler.done():
            self._scheduler = asyncio.get_running_loop().create_task(self._schedule())
        kind = sampling_params.output_kind
        if _standin.script.stream_partials:
            kind = RequestOutputKind.CUMULATIVE
        sent = 0
        try:
            while True:
                await seq.step.wait()
                seq.step.clear()
                done = seq.aborted or seq.decoded >= len(seq.answer_ids)
                if done or kind != RequestOutputKind.FINAL_ONLY:
                    new = seq.answer_ids[sent if kind == RequestOutputKind.DELTA else 0:seq.decoded]
                    sent = seq.decoded
                    yield self._output(seq, new, done)
                if done:
                    return
        except (asyncio.CancelledError, GeneratorExit):
            await self.abort(request_id)  # as vLLM does when the caller goes away
            raise
        finally:
            self.running.pop(request_id, None)

    def _output(self, seq: _Sequence, ids: list[int], done: bool) -> RequestOutput:
        finish = ("abort" if seq.aborted else seq.finish) if done else None
        completion = CompletionOutput(index=0, text=self.tokenizer.decode(ids), token_ids=list(ids),
                                      finish_reason=finish, stop_reason=None)
        return RequestOutput(request_id=seq.request_id, prompt=None, prompt_token_ids=list(seq.prompt_ids),
                             prompt_logprobs=None, outputs=[completion], finished=done,
                             num_cached_tokens=seq.cached)

    async def _schedule(self) -> None:
        while self.running:
            await asyncio.sleep(_standin.script.step_s)  # one forward pass over the running batch
            self.max_running = max(self.max_running, len(self.running))
            for seq in list(self.running.values()):
                seq.decoded = min(len(seq.answer_ids), seq.decoded + _standin.script.tokens_per_step)
                seq.step.set()

    async def abort(self, request_id: str | list[str], internal: bool = False) -> None:
        for rid in [request_id] if isinstance(request_id, str) else list(request_id):
            self.aborted.append(rid)
            seq = self.running.pop(rid, None)
            if seq is not None:
                seq.aborted = True
                seq.step.set()

    def shutdown(self, timeout: float | None = None) -> None:
        self.shut_down = True
        for rid in list(self.running):
            seq = self.running.pop(rid)
            seq.aborted = True
            seq.step.set()
        if self._scheduler is not None:
            self._scheduler.cancel()
