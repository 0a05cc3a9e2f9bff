"""Stand-in for vLLM (tests only; see tests/vllm_standin/README.md)."""

from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.entrypoints.llm import LLM
from vllm.outputs import CompletionOutput, RequestOutput
from vllm.sampling_params import RequestOutputKind, SamplingParams, StructuredOutputsParams

__version__ = "0.10.2+standin"
__all__ = ["LLM", "AsyncEngineArgs", "CompletionOutput", "RequestOutput", "RequestOutputKind", "SamplingParams",
           "StructuredOutputsParams"]
