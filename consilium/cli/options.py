"""Options shared by every subcommand that calls a model, defined once."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from consilium.errors import UserError
from consilium.models.backends.openai_compat import DIALECTS
from consilium.models.factory import SPEC_HELP, ModelOptions

__all__ = ["add_model_arguments", "model_options", "positive_int", "run_config"]

C = TypeVar("C", bound=BaseModel)


def add_model_arguments(parser: argparse.ArgumentParser, *, default: str | None = "embedded",
                        flag: str = "--model") -> None:
    """The model options; ``default=None`` makes the model flag required (judges name theirs)."""
    group = parser.add_argument_group("model")
    if default is None:
        group.add_argument(flag, required=True, dest="model", metavar="SPEC", help=f"{SPEC_HELP} (required)")
    else:
        group.add_argument(flag, default=default, dest="model", metavar="SPEC",
                           help=f"{SPEC_HELP} (default: {default})")
    group.add_argument("--base-url", default=None,
                       help="OpenAI-compatible server URL (default: $OPENAI_BASE_URL); several comma-separated "
                            "URLs are replicas of one model and calls are spread over them")
    group.add_argument("--schema-dialect", choices=DIALECTS, default="json_schema",
                       help="how the server takes a JSON schema: json_schema (OpenAI, vLLM), "
                            "json_object (llama-cpp-python server) or none (default: json_schema)")
    group.add_argument("--max-concurrency", type=positive_int, default=4, help="concurrent model calls (default 4)")
    group.add_argument("--timeout", type=float, default=None, help="seconds per model call (default 120)")
    group.add_argument("--no-cache", action="store_true", help="do not use the SQLite response cache")
    group.add_argument("--cache-path", type=Path, default=None,
                       help="response cache file (default: $CONSILIUM_CACHE or ~/.cache/consilium/responses.sqlite)")


def model_options(args: argparse.Namespace, **overrides: object) -> ModelOptions:
    values: dict[str, object] = {
        "base_url": args.base_url,
        "schema_dialect": args.schema_dialect,
        "max_concurrency": args.max_concurrency,
        "timeout_s": args.timeout,
        "cache_path": args.cache_path,
    }
    if args.no_cache:
        values["cache"] = False
    values.update(overrides)
    return ModelOptions.from_env(**values)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def run_config(model: type[C], path: Path | None, flags: dict[str, Any]) -> C:
    """Run settings: the defaults, then a YAML file (``--config``), then flags given on the command line.

    A problem names the file and field, or the flag.
    """
    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise UserError(f"{path}: config file not found") from None
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise UserError(f"{path}: cannot read the config ({str(exc).splitlines()[0]})") from None
        if not isinstance(loaded, dict):
            raise UserError(f"{path}: a config file must be a mapping of settings")
        try:
            model.model_validate(loaded)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise UserError(f"{path}: {'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}") from None
        values.update(loaded)
    given = {key: value for key, value in flags.items() if value is not None}
    if "max_tokens" in given and isinstance(given["max_tokens"], int):
        stages = {**model.model_fields["max_tokens"].get_default(call_default_factory=True),
                  **values.get("max_tokens", {})}
        given["max_tokens"] = {stage: given["max_tokens"] for stage in stages}
    values.update(given)
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UserError(f"{('--' + where.split('.')[0].replace('_', '-')) if where else 'options'}: {err['msg']}") \
            from None
