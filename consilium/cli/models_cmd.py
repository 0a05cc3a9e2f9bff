"""``consilium models check``: one plain and one schema-constrained call, with timings and usage, and a
probe of whether the backend enforces a schema (the library's :func:`consilium.api.modelcheck.check_model`)."""

from __future__ import annotations

import argparse

from consilium.cli.options import add_model_arguments, build_named, model_spec, show_help
from consilium.cli.table import SUMMARIES
from consilium.redact import clip

__all__ = ["register", "run_check"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    models = sub.add_parser("models", help=SUMMARIES["models"])
    models.set_defaults(func=show_help(models))
    models_sub = models.add_subparsers(dest="models_command", metavar="SUBCOMMAND")
    check = models_sub.add_parser("check", help="make one plain and one schema-constrained call and report")
    add_model_arguments(check, refs=True)
    check.add_argument("--max-tokens", type=int, default=64, help="output tokens per call (default 64)")
    check.set_defaults(func=run_check)



def run_check(args: argparse.Namespace) -> int:
    from consilium.api.modelcheck import CheckOptions, cache_note, check_model, enforcement_line

    # A check must reach the model: never answer it from the cache.
    done = check_model(build_named(args, cache=False), CheckOptions(max_tokens=args.max_tokens,
                                                                    timeout_s=args.timeout or 120.0))
    recorder, enforcement = done.recorder, done.enforcement
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
    if enforcement.structured_refused is not None:
        print(f"[structured] failed: {clip(enforcement.structured_refused, 300)}")
    total = recorder.ledger.total
    elapsed = sum(c.latency_ms for c in recorder.calls) / 1000
    overall = total.output_tokens / elapsed if elapsed > 0 else 0.0
    print(f"total: {total.calls} calls, {total.input_tokens} input + {total.output_tokens} output tokens, "
          f"{elapsed:.2f} s, {overall:.1f} tokens/s")
    print(enforcement_line(recorder, enforcement))
    note = cache_note(model_spec(args), recorder)
    if note:
        print(note)
    return 1 if enforcement.structured_refused is not None else 0
