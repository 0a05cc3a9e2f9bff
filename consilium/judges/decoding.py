"""A judge's decoding order: in which order its calls are asked with and without the schema enforced.

* ``constrained``: every attempt is asked under the rubric's schema, from the first one (a grammar for
  ``embedded``/``gguf:``, ``response_format`` for ``openai:``, guided decoding for ``vllm:``, a chat
  model's structured output for ``langchain:``); an answer still invalid goes back with the validation
  error at most ``max_repairs`` times. At most 1 + max_repairs calls per item.
* ``paper``: the order NPCBench's criterion judge used (npcbench.txt App. D.2, L1764: "Outputs missing
  required fields are retried up to four times; three remaining Targeted Audit judgments use
  JSON-schema-constrained decoding with the same prompts and model"): the schema only described in the
  prompt, repaired at most ``max_repairs`` times, then one schema-constrained attempt. At most
  2 + max_repairs calls per item.

The order a judgement used is :func:`resolve_decoding`'s: the one asked for (``--judge-decoding``), else
the rubric's pin (``decoding:`` in its YAML), else ``constrained`` where the judge's backend enforces
schemas (``ChatModel.enforces_schemas``) and ``paper`` where it does not (a schema it cannot enforce
would only be described in the prompt either way). Each judgement records it (``Judgement.decoding``).
"""

from __future__ import annotations

from typing import Literal, get_args

from consilium.models import CallRecorder, ChatModel, for_run
from consilium.models.protocol import enforces_schemas

__all__ = ["DECODINGS", "JudgeDecoding", "decoding_models", "resolve_decoding"]

JudgeDecoding = Literal["constrained", "paper"]
DECODINGS: tuple[str, ...] = get_args(JudgeDecoding)


def resolve_decoding(model: ChatModel, chosen: JudgeDecoding | None, pinned: JudgeDecoding | None) -> JudgeDecoding:
    """The order a judge asks in: ``chosen`` (the user's), else the rubric's ``pinned`` one, else the backend's."""
    if chosen is not None:
        return chosen
    if pinned is not None:
        return pinned
    return "constrained" if enforces_schemas(model) else "paper"


def decoding_models(model: ChatModel, recorder: CallRecorder, max_repairs: int,
                    order: JudgeDecoding) -> tuple[ChatModel | None, ChatModel]:
    """The per-run models of ``order`` (consilium/judges/asking.py asks them in turn): the relaxed one (the
    schema only described, with the repairs; None in the constrained order) and the constrained one (with
    the repairs in the constrained order, alone and unrepaired after the relaxed attempts in the paper's)."""
    if order == "constrained":
        return None, for_run(model, recorder, max_repairs=max_repairs)
    return for_run(model, recorder, max_repairs=max_repairs), for_run(model, recorder, max_repairs=0)
