"""Options shared by every subcommand that calls a model, defined once."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from consilium.cli.concurrency import DEFAULT_CONCURRENCY, add_concurrency_argument, default_concurrency
from consilium.datafiles import first_error, load_data_file, read_data_file
from consilium.errors import UserError
from consilium.models.backends.http_transports import HTTP_CLIENTS
from consilium.models.backends.openai_compat import DIALECTS
from consilium.models.config_file import ModelConfigFile
from consilium.models.factory import SPEC_HELP, ModelOptions, build_ref
from consilium.models.protocol import ChatModel
from consilium.models.reasoning import TOKEN_PARAMS
from consilium.models.refs import parse_model_ref
from consilium.models.wrappers import RetryPolicy

__all__ = ["FLAG_NAMES", "ModelConfigFile", "add_model_arguments", "add_otel_argument", "add_run_arguments",
           "build_named", "finite_float", "flag_name", "fraction", "model_options", "model_spec", "named_label",
           "non_negative_float", "non_negative_int", "positive_float", "positive_int", "run_config", "show_help"]

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
    config = _model_file(args) or ModelConfigFile.model_construct(spec="")  # no file: every setting unset
    base_url = config.base_url if not isinstance(config.base_url, list) else ",".join(config.base_url)
    values: dict[str, object] = {
        "base_url": args.base_url or base_url,
        "schema_dialect": args.schema_dialect or config.schema_dialect or "json_schema",
        "http_client": args.http_client or config.http_client or "aiohttp",
        "max_concurrency": getattr(args, "concurrency", None) or config.max_concurrency
        or (default_concurrency(model_spec(args)) if hasattr(args, "model_default") else DEFAULT_CONCURRENCY),
        "timeout_s": args.timeout or config.timeout_s,
        "cache_path": args.cache_path,
        "token_param": getattr(args, "token_param", None) or config.token_param,
        "omit_settings": tuple(config.omit_settings) if config.omit_settings is not None else None,
    }
    if config.prices is not None:  # the prices of the model the file configures, not of a moderator or extra model
        # One model named by the flag is the model the file configures (its spec given on the command line); of
        # several (a jury), the one whose spec is the file's: a price list is one model's, never the first's.
        several = isinstance(args.model, list) and len(args.model) > 1
        values.update(prices=config.prices, prices_spec=config.spec if several else model_spec(args))
    if config.api_key_env:
        key = os.environ.get(config.api_key_env)
        if not key:
            raise UserError(f"{args.model_config}: api_key_env: ${config.api_key_env} is not set")
        values["api_key"] = key
    if args.no_cache:
        values["cache"] = False
    if args.max_attempts or args.retry_base_delay is not None:
        default = RetryPolicy()
        values["retry"] = RetryPolicy(max_attempts=args.max_attempts or default.max_attempts,
                                      base_delay_s=default.base_delay_s if args.retry_base_delay is None
                                      else args.retry_base_delay)
    values.update({k: v for k, v in overrides.items() if v is not None})
    return ModelOptions.from_env(**values)


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


FLAG_NAMES: dict[str, str] = {"timeout_s": "--timeout", "wall_limit_s": "--wall-limit"}
"""Run-config fields whose flag is not the field's name with dashes (``max_rounds`` is ``--max-rounds``)."""


def flag_name(field: str) -> str:
    """The flag that sets run-config ``field``, as the user types it."""
    return FLAG_NAMES.get(field, "--" + field.replace("_", "-"))


def run_config(model: type[C], path: Path | None, flags: dict[str, Any], *, known_only: bool = False) -> C:
    """Run settings: the defaults, then a YAML file (``--config``), then flags given on the command line.

    ``flags`` is keyed by field. The file is checked on its own first, so a problem names the file and
    field; a problem the flags bring in names the flag (see :func:`flag_name`). ``known_only`` takes
    only the file's keys that ``model`` has (a cohort of several protocols, each taking its own share,
    has checked that every key belongs to one of them: consilium/cohort/protocols.py).
    """
    values: dict[str, Any] = {}
    if path is not None:
        loaded = read_data_file(path, "config") or {}
        if not isinstance(loaded, dict):
            raise UserError(f"{path}: a config file must be a mapping of settings")
        if known_only:
            loaded = {key: value for key, value in loaded.items() if key in model.model_fields}
            stages = getattr(model, "STAGE_TOKENS", None)
            if stages and isinstance(loaded.get("max_tokens"), dict):  # its own stages' budgets, by stage
                loaded["max_tokens"] = {k: v for k, v in loaded["max_tokens"].items() if k in stages}
        try:
            model.model_validate(loaded)
        except ValidationError as exc:
            raise UserError(f"{path}: {first_error(exc)}") from None
        values.update(loaded)
    given = {key: value for key, value in flags.items() if value is not None}
    if "max_tokens" in given and isinstance(given["max_tokens"], int) and not isinstance(given["max_tokens"], bool):
        stages = {**model.model_fields["max_tokens"].get_default(call_default_factory=True),
                  **values.get("max_tokens", {})}
        given["max_tokens"] = {stage: given["max_tokens"] for stage in stages}
    try:
        return model.model_validate({**values, **given})
    except ValidationError as exc:
        raise UserError(_flag_error(model, values, given, exc.errors()[0])) from None


def _flag_error(model: type[BaseModel], values: dict[str, Any], given: dict[str, Any], err: ErrorDetails) -> str:
    """``--flag: reason`` for a flag's bad value, or ``--flag: field.path: reason`` when the flag's value
    clashes with another field (``--min-roles 7`` against the default max_roles)."""
    where = ".".join(str(p) for p in err["loc"])
    field = str(err["loc"][0]) if err["loc"] else ""
    if field in given:
        rest = ".".join(str(p) for p in err["loc"][1:])
        return f"{flag_name(field)}: {rest + ': ' if rest else ''}{err['msg']}"

    def still_fails(without: str) -> bool:
        try:
            model.model_validate({**values, **{k: v for k, v in given.items() if k != without}})
        except ValidationError as exc:
            return any(e["loc"] == err["loc"] and e["type"] == err["type"] for e in exc.errors())
        return False

    culprits = [key for key in given if not still_fails(key)] or list(given)
    return f"{', '.join(flag_name(k) for k in culprits)}: {where + ': ' if where else ''}{err['msg']}"
