"""llama.cpp grammars for JSON schemas, and a sampler that consults the grammar last.

Used by the in-process GGUF backend (backends/llama.py): :func:`json_grammar` turns a schema into the
grammar llama.cpp samples under, and :class:`GrammarLast` samples first and asks the grammar about the one
token picked (benchmarks/embedded.py measures both).
"""

from __future__ import annotations

import ctypes
import json
import math
from typing import Any

__all__ = ["GRAMMAR_MAX_INTEGER_RANGE", "GRAMMAR_MAX_LENGTH", "GrammarLast", "grammar_last_init", "grammar_safe",
           "json_grammar"]


# llama.cpp refuses a grammar whose repetitions exceed its "sane defaults" (a string
# maxLength above 1000 does) and llama-cpp-python then crashes the process. A bound
# above it is left out of the grammar, not lowered to it: lowering would hold a long
# string (a free-form revision's one-string report) to 1000 characters while the
# structured report's sections, each under it, share the whole budget (one
# length budget for both formats). Decoding still ends at max_tokens, and
# validation applies the schema's own bound to every answer. The bounds that stay were
# measured (benchmarks/embedded.py): they make the grammar ~45x larger and its build 3 ms
# a call instead of 0.07, but decode no slower, and they end a section that a looping
# model would fill until max_tokens; so they stay, one character above the schema's
# own: a string the grammar had to end is then one character over its budget, which
# validation refuses and sends back for repair, as it does a free-form answer over
# its budget. A bound at the schema's own value would end the string there and pass
# the cut text off as the model's answer.
GRAMMAR_MAX_LENGTH = 1000
GRAMMAR_BOUND_POLICY = "over1-ranges"  # in the backend's endpoint: answers under another policy differ


#: An integer bounded on both sides with at most this many values is written as their enum (see grammar_safe).
GRAMMAR_MAX_INTEGER_RANGE = 256


def _integer_range(schema: dict[str, Any]) -> list[int] | None:
    """The values of ``{"type": "integer", "minimum": a, "maximum": b}`` (no enum of its own), when few."""
    low, high = schema.get("minimum"), schema.get("maximum")
    if (schema.get("type") != "integer" or "enum" in schema or not isinstance(low, int) or not isinstance(high, int)
            or not 0 <= high - low < GRAMMAR_MAX_INTEGER_RANGE):
        return None
    return list(range(low, high + 1))


def grammar_safe(schema: Any) -> Any:
    """A copy of ``schema`` whose every ``maxLength`` is one above the schema's (so an answer the
    grammar had to end fails validation instead of being cut), or left out where that would exceed
    :data:`GRAMMAR_MAX_LENGTH`; and whose every bounded integer (a judge's 1-5 score) is the enum of its
    values: llama-cpp-python's converter drops ``minimum``/``maximum``, so its grammar let any integer
    through (a 0 or a 7 the schema refuses, a repair round on a grammar-constrained judge)."""
    if isinstance(schema, dict):
        safe = {key: grammar_safe(value) for key, value in schema.items()}
        values = _integer_range(safe)
        if values is not None:
            safe["enum"] = values
        if isinstance(safe.get("maxLength"), int):
            if safe["maxLength"] + 1 > GRAMMAR_MAX_LENGTH:
                del safe["maxLength"]
            else:
                safe["maxLength"] += 1
        return safe
    if isinstance(schema, list):
        return [grammar_safe(item) for item in schema]
    return schema


# llama-cpp-python's JSON-schema converter lets a string hold raw control characters ([^"\\]), which
# JSON forbids: a model that writes a newline inside a string gave an answer no parser accepts, and a
# repair round. llama.cpp's own converter excludes them; so does this grammar.
_LOOSE_CHAR = 'char ::= [^"\\\\] |'
_JSON_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


def json_grammar(schema: Any) -> Any:
    """The llama.cpp grammar (``LlamaGrammar``) of ``schema``: its bounds kept up to
    :data:`GRAMMAR_MAX_LENGTH` (:func:`grammar_safe`), control characters kept out of its strings."""
    from llama_cpp.llama_grammar import LlamaGrammar

    text = LlamaGrammar.from_json_schema(json.dumps(grammar_safe(schema)), verbose=False)._grammar
    return LlamaGrammar.from_string(text.replace(_LOOSE_CHAR, _JSON_CHAR, 1), verbose=False)


class GrammarLast:
    """A llama-cpp-python sampler (``Llama._sampler``) that samples first and asks the grammar after.

    llama-cpp-python puts the grammar first in its chain, so it filters all 49,152 tokens of the
    vocabulary at every step: constrained decoding took about twice as long per token as free decoding
    (benchmarks/embedded.py). Here the other samplers (penalties, top-k, top-p, min-p, temperature) pick a
    token, the grammar checks that one token, and only a token it refuses is sampled again with the
    grammar applied first, as llama.cpp's own ``common_sampler_sample`` does. Both chains then accept the
    token, so the penalties and the grammar see what was generated."""

    def __init__(self, llm: Any, free: Any, grammar: Any) -> None:
        import llama_cpp
        import numpy as np

        self._api = llama_cpp
        self._free = free  # the chain without the grammar (llama_cpp._internals.LlamaSampler)
        self._grammar = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode("utf-8"),
                                                             grammar._root.encode("utf-8"))
        self._n = int(llm.n_vocab())
        self._data = (llama_cpp.llama_token_data * self._n)()
        self._view = np.ctypeslib.as_array(self._data)  # a structured view: id, logit, p
        self._ids = np.arange(self._n, dtype=np.intc)
        self._one = (llama_cpp.llama_token_data * 1)()
        #: Tokens the grammar refused after sampling (each then sampled again under the grammar).
        self.resampled = 0

    def _candidates(self, ctx: Any, idx: int) -> Any:
        import numpy as np

        logits = np.ctypeslib.as_array(self._api.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n,))
        self._view["id"], self._view["logit"], self._view["p"] = self._ids, logits, 0.0
        return self._api.llama_token_data_array(data=self._data, size=self._n, selected=-1, sorted=False)

    def _pick(self, ctx: Any, idx: int, grammar_first: bool) -> int:
        candidates = self._candidates(ctx, idx)
        if grammar_first:
            self._api.llama_sampler_apply(self._grammar, ctypes.byref(candidates))
        self._api.llama_sampler_apply(self._free.sampler, ctypes.byref(candidates))
        return int(candidates.data[candidates.selected].id)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        token = self._pick(ctx, idx, grammar_first=False)
        self._one[0] = self._api.llama_token_data(token, 1.0, 0.0)
        single = self._api.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        self._api.llama_sampler_apply(self._grammar, ctypes.byref(single))
        if not math.isfinite(self._one[0].logit):  # refused: sample again with the grammar first
            self.resampled += 1
            token = self._pick(ctx, idx, grammar_first=True)
        self._api.llama_sampler_accept(self._grammar, token)
        self._api.llama_sampler_accept(self._free.sampler, token)
        return token

    def __del__(self) -> None:
        grammar, self._grammar = getattr(self, "_grammar", None), None
        if grammar is not None:
            self._api.llama_sampler_free(grammar)


def grammar_last_init(llm: Any) -> Any:
    """``llm._init_sampler`` building a :class:`GrammarLast` when a call has a grammar."""
    init = llm._init_sampler

    def build(**settings: Any) -> Any:
        grammar = settings.pop("grammar", None)
        free = init(**settings)
        return free if grammar is None else GrammarLast(llm, free, grammar)

    return build
