"""``AsyncEngineArgs``: a dataclass, so an argument vLLM does not know is a TypeError, as in vLLM."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AsyncEngineArgs:
    model: str = "facebook/opt-125m"
    dtype: str = "auto"
    seed: int | None = 0
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int = 1
    quantization: str | None = None
    enable_prefix_caching: bool | None = None
    enforce_eager: bool = False
    disable_log_stats: bool = False
