"""``consilium models check``: one plain and one schema-constrained call, with timings and usage."""

from __future__ import annotations

import argparse
from typing import Literal

from pydantic import BaseModel, Field

from consilium import aio
from consilium.cli.options import add_model_arguments, model_options, model_spec, show_help
from consilium.models import CallRecorder, CallTag, GenerationSettings, Message, ModelRequest, OutputSchema
from consilium.models.factory import build_model, for_run
from consilium.redact import clip

__all__ = ["CheckAnswer", "cache_note", "register", "run_check"]


class CheckAnswer(BaseModel):
    """The schema of the constrained check call."""

    specialty: str = Field(description="the medical specialty best placed to see this patient")
    urgency: Literal["routine", "urgent", "emergency"]


_SYSTEM = "You are a concise clinical assistant."
_CASE = "A 58-year-old man has crushing chest pain for 40 minutes, sweating, and ST elevation in leads II, III, aVF."


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    models = sub.add_parser("models", help="inspect and check model backends")
    models.set_defaults(func=show_help(models))
    models_sub = models.add_subparsers(dest="models_command", metavar="SUBCOMMAND")
    check = models_sub.add_parser("check", help="make one plain and one schema-constrained call and report")
    add_model_arguments(check)
    check.add_argument("--max-tokens", type=int, default=64, help="output tokens per call (default 64)")
    check.set_defaults(func=run_check)



async def _check(args: argparse.Namespace) -> CallRecorder:
    # A check must reach the model: never answer it from the cache.
    base = build_model(model_spec(args), model_options(args, cache=False))
    recorder = CallRecorder()
    # A check reports an answer cut off at --max-tokens rather than asking again with more room;
    # an empty answer is still asked again and then fails the check.
    model = for_run(base, recorder, accept_truncated=True)
    settings = GenerationSettings(max_tokens=args.max_tokens, temperature=0.0, seed=0, timeout_s=args.timeout or 120.0)
    try:
        await model.generate(ModelRequest(
            messages=(Message(role="system", content=_SYSTEM),
                      Message(role="user", content=f"{_CASE}\nIn one sentence, what is the most likely diagnosis?")),
            settings=settings, tag=CallTag(stage="check", role="plain")))
        # The same system message and case as the first call, so a server with a prefix cache serves
        # that shared prefix from it and reports the tokens as cached.
        await model.generate(ModelRequest(
            messages=(Message(role="system", content=_SYSTEM),
                      Message(role="user", content=f"{_CASE}\nWhich specialty should see him, and how urgently? "
                                                   'Answer in JSON, as {"specialty": ..., "urgency": ...}.')),
            settings=settings.model_copy(update={"max_tokens": max(args.max_tokens, 96)}),
            schema=OutputSchema.from_model(CheckAnswer), tag=CallTag(stage="check", role="structured")))
    finally:
        await model.aclose()
    return recorder


def run_check(args: argparse.Namespace) -> int:
    recorder = aio.run(_check(args))
    print(f"model: {recorder.calls[0].model}  (spec {model_spec(args)})")
    for call in recorder.calls:
        u = call.usage
        seconds = call.latency_ms / 1000
        rate = f"{u.output_tokens / seconds:.1f} tokens/s" if seconds > 0 else "n/a tokens/s"
        counted = "estimated" if u.estimated else "reported"
        cut = f", cut off at max_tokens {call.settings.max_tokens}" if call.finish_reason == "length" else ""
        print(f"[{call.role}] latency {call.latency_ms:.0f} ms, input {u.input_tokens} ({u.cached_tokens} cached), "
              f"output {u.output_tokens} tokens ({counted}), {rate}{cut}")
        print(f"  -> {clip(call.response.strip(), 200)}")
    total = recorder.ledger.total
    elapsed = sum(c.latency_ms for c in recorder.calls) / 1000
    overall = total.output_tokens / elapsed if elapsed > 0 else 0.0
    print(f"total: {total.calls} calls, {total.input_tokens} input + {total.output_tokens} output tokens, "
          f"{elapsed:.2f} s, {overall:.1f} tokens/s")
    note = cache_note(model_spec(args), recorder)
    if note:
        print(note)
    return 0


def cache_note(spec: str, recorder: CallRecorder) -> str | None:
    """A served model that reported no cached prompt tokens for the second call, which repeats the
    first call's system message and case: say how vLLM is made to report them."""
    structured = [c for c in recorder.calls if c.role == "structured" and c.error is None]
    if not spec.startswith("openai:") or not structured or any(c.usage.cached_tokens for c in recorder.calls):
        return None
    return ("note: the server reported no cached prompt tokens, although the second call repeats the first "
            "call's opening; vLLM reports them (usage.prompt_tokens_details.cached_tokens) only when started "
            "with --enable-prompt-tokens-details (and serves them only with prefix caching on, its default)")
