"""Options shared by every subcommand that calls a model, defined once."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from pydantic import BaseModel

from consilium.cli.concurrency import add_concurrency_argument
from consilium.datafiles import load_data_file
from consilium.errors import UserError
from consilium.models.backends.http_transports import HTTP_CLIENTS
from consilium.models.backends.openai_compat import DIALECTS
from consilium.models.config_file import ModelConfigFile
from consilium.models.factory import SPEC_HELP, ModelOptions, build_ref
from consilium.models.protocol import ChatModel
from consilium.models.reasoning import TOKEN_PARAMS
from consilium.models.refs import parse_model_ref
from consilium.spec.connection import DEFAULT_CONCURRENCY, connection_options, default_concurrency

__all__ = ["ModelConfigFile", "add_model_arguments", "add_otel_argument", "add_run_arguments",
           "build_named", "finite_float", "fraction", "model_options", "model_spec", "named_label",
           "non_negative_float", "non_negative_int", "positive_float", "positive_int", "show_help"]

C = TypeVar("C", bound=BaseModel)


def add_model_arguments(parser: argparse.ArgumentParser, *, default: str | None = "embedded",
                        flag: str = "--model", repeatable: bool = False, refs: bool = False) -> None:
    """The model options; ``default=None`` makes a model required (by flag or --model-config);
    ``repeatable``: the flag may be given several times (a jury of judges), read with ``model_specs``;
    ``refs``: the flag takes a judge's forms, as ``--judge-model`` does (read with :func:`build_named`)."""
    group = parser.add_argument_group("model")
    shown = "required unless --model-config names one" if default is None else f"default: {default}"
    shown += "; give it several times for a jury" if repeatable else ""
    if flag == "--judge-model" or refs:  # consilium/models/refs.py
        shown += "; SPEC@BASE_URL[#KEY_VAR] or a model config file: a judge on its own server"
    group.add_argument(flag, default=None, dest="model", metavar="SPEC", help=f"{SPEC_HELP} ({shown})",
                       action="append" if repeatable else "store")
    parser.set_defaults(model_default=default, model_flag=flag)
    group.add_argument("--model-config", type=Path, default=None, metavar="FILE",
                       help="model settings as YAML (configs/models/*.yaml); flags override it")
    group.add_argument("--base-url", default=None,
                       help="OpenAI-compatible server URL (default: $OPENAI_BASE_URL); several comma-separated "
                            "URLs are replicas of one model and calls are spread over them")
    group.add_argument("--schema-dialect", choices=DIALECTS, default=None,
                       help="how the server takes a JSON schema: json_schema (OpenAI, vLLM), "
                            "json_object (llama-cpp-python server) or none (default: json_schema)")
    group.add_argument("--http-client", choices=HTTP_CLIENTS, default=None,
                       help="how openai: requests travel: aiohttp (lean, the default) or sdk (the openai SDK)")
    group.add_argument("--token-param", choices=TOKEN_PARAMS, default=None,
                       help="how openai: sends the output cap: max_tokens, or max_completion_tokens (OpenAI's "
                            "reasoning models); default: by the model name (docs/models.md, Reasoning models)")
    add_concurrency_argument(group, positive_int)
    group.add_argument("--timeout", type=positive_float, default=None, help="seconds per model call (default 120)")
    group.add_argument("--max-attempts", type=positive_int, default=None,
                       help="attempts per call on timeouts, 429, 5xx and dropped connections (default 5)")
    group.add_argument("--retry-base-delay", type=non_negative_float, default=None, metavar="SECONDS",
                       help="first backoff delay; doubles per attempt, with full jitter (default 0.5)")
    group.add_argument("--no-cache", action="store_true", help="do not use the SQLite response cache")
    group.add_argument("--cache-path", type=Path, default=None,
                       help="response cache file (default: $CONSILIUM_CACHE or ~/.cache/consilium/responses.sqlite)")


def _model_file(args: argparse.Namespace) -> ModelConfigFile | None:
    path: Path | None = getattr(args, "model_config", None)
    return load_data_file(path, ModelConfigFile, "model config") if path is not None else None


def model_spec(args: argparse.Namespace) -> str:
    """The model spec: the flag, else the model config's, else the command's default."""
    config = _model_file(args)
    given = args.model[0] if isinstance(args.model, list) else args.model  # a repeatable flag: its first
    spec = given or (config.spec if config else None) or args.model_default
    if spec is None:
        raise UserError(f"{args.model_flag}: a model is required (a spec, or --model-config FILE)")
    return str(spec)


def build_named(args: argparse.Namespace, **overrides: object) -> ChatModel:
    """The model the command's model flag names (a spec, ``SPEC@BASE_URL#KEY_VAR`` or a model config file:
    consilium/models/refs.py), on its own server if it has one, else with the command's options."""
    return build_ref(parse_model_ref(model_spec(args), flag=args.model_flag), model_options(args, **overrides))


def named_label(args: argparse.Namespace, model: ChatModel) -> str:
    """The model :func:`build_named` built as a judgement records its judge (``judge_model``): its model id,
    with its own server if it has one, so the same model on two servers is two judges."""
    return parse_model_ref(model_spec(args), flag=args.model_flag).label(model.model_id)


def model_options(args: argparse.Namespace, **overrides: object) -> ModelOptions:
    """The options the model flags (and a ``--model-config`` file under them) give
    (consilium/spec/connection.py)."""
    config = _model_file(args)
    several = isinstance(args.model, list) and len(args.model) > 1
    # One model named by the flag is the model the file configures (its spec given on the command line); of
    # several (a jury), the one whose spec is the file's: a price list is one model's, never the first's.
    priced = None
    if config is not None and config.prices is not None:
        priced = config.spec if several else model_spec(args)
    return connection_options(
        getattr(args, "model_config", None), priced=priced, base_url=args.base_url, schema_dialect=args.schema_dialect,
        http_client=args.http_client, timeout=args.timeout, cache_path=args.cache_path,
        token_param=getattr(args, "token_param", None), no_cache=bool(args.no_cache), max_attempts=args.max_attempts,
        retry_base_delay=args.retry_base_delay,
        max_concurrency=cast("int | None", overrides.pop("max_concurrency", None))
        or getattr(args, "concurrency", None) or (config.max_concurrency if config else None)
        or (default_concurrency(model_spec(args)) if hasattr(args, "model_default") else DEFAULT_CONCURRENCY),
        **overrides)


def add_run_arguments(parser: argparse.ArgumentParser, *, config_file: str, max_tokens: dict[str, int]) -> None:
    """The run-settings flags every run command shares; each overrides the --config file."""
    parser.add_argument("--config", type=Path, default=None,
                        help=f"YAML file of run settings (see {config_file}); flags override it")
    parser.add_argument("--seed", type=int, default=None, help="sampling seed (default 0)")
    parser.add_argument("--temperature", type=finite_float, default=None,
                        help="sampling temperature, 0 to 2 (default 0)")
    parser.add_argument("--max-tokens", type=positive_int, default=None,
                        help="output tokens per call for every stage (default: per stage, "
                             + ", ".join(f"{k} {v}" for k, v in max_tokens.items()) + ")")
    parser.add_argument("--wall-limit", type=positive_float, default=None, metavar="SECONDS",
                        help="stop a run after this many seconds and record it as failed")
    parser.add_argument("--out", type=Path, default=Path("runs"), help="output folder (default runs/)")
    add_otel_argument(parser)


def add_otel_argument(parser: argparse.ArgumentParser) -> None:
    """``--otel``: OpenTelemetry spans for each run, node and model call (docs/observability.md)."""
    parser.add_argument("--otel", action="store_true",
                        help="send OpenTelemetry spans (run, graph node, model call; GenAI conventions) to the "
                             "configured TracerProvider, as CONSILIUM_OTEL=1 does; needs pip install 'consilium[otel]'")


def show_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The action of a command group run without a subcommand: its help, and exit code 2."""
    def action(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return action


def positive_int(text: str) -> int:
    return _checked(text, int, lambda v: v >= 1, "a positive integer")


def non_negative_int(text: str) -> int:
    return _checked(text, int, lambda v: v >= 0, "an integer of 0 or more")


def finite_float(text: str) -> float:
    """A number; argparse's ``type=float`` would also take "nan" and "inf"."""
    return _checked(text, float, math.isfinite, "a number")


def positive_float(text: str) -> float:
    return _checked(text, float, lambda v: math.isfinite(v) and v > 0, "a positive number")


def non_negative_float(text: str) -> float:
    return _checked(text, float, lambda v: math.isfinite(v) and v >= 0, "a number of 0 or more")


def fraction(text: str) -> float:
    """A share strictly between 0 and 1 (``--train-fraction``)."""
    return _checked(text, float, lambda v: 0 < v < 1, "a number between 0 and 1 (exclusive)")


N = TypeVar("N", int, float)


def _checked(text: str, kind: Callable[[str], N], ok: Callable[[N], bool], what: str) -> N:
    """A flag's value as ``kind`` if ``ok``; argparse names the flag in the error."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value
