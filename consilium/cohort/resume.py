"""``cohort --resume RUN_DIR``: the cohort's own settings, and a refusal of any flag that disagrees.

A resumed cohort takes everything from its manifest. A flag given again must say the same thing
(it may, so a scheduler can rerun the original command line with ``--resume`` added); a flag that
says otherwise is refused with one line naming it, before anything runs, since arms made under two
settings would be mixed in one table.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from consilium.cohort.manifest import CohortManifest
from consilium.errors import UserError
from consilium.redact import MASK, redact_url

__all__ = ["refuse_conflicts"]


def _conflict(flag: str, given: Any, kept: Any, run_dir: Path) -> UserError:
    return UserError(f"{flag}: {given!r} differs from the resumed cohort's {kept!r} ({run_dir}/manifest.json); "
                     "a resumed cohort keeps its settings (start a new cohort to change them)")


def _same_config(values: dict[str, Any], kept: dict[str, Any]) -> str | None:
    """The first run setting in ``values`` that differs from the cohort's, if any."""
    for key, value in values.items():
        old = kept.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            if any(old.get(k) != v for k, v in value.items()):
                return key
        elif old != value:
            return key
    return None


def refuse_conflicts(args: argparse.Namespace, manifest: CohortManifest, run_dir: Path, *,
                     variants: tuple[str, ...] | None, specs: list[str] | None,
                     experiment: Any | None, config_values: dict[str, Any] | None,
                     model_options: Any | None = None) -> None:
    """Raise a :class:`UserError` naming the first flag given on the command line that disagrees with
    the manifest. The caller parses the flags (so a malformed one is reported as for a new cohort)."""
    s = manifest.settings
    if args.out is not None and Path(args.out).resolve() != run_dir.resolve().parent:
        raise _conflict("--out", str(args.out), str(run_dir.resolve().parent), run_dir)
    if args.cases is not None and str(Path(args.cases).resolve()) != s.cases:
        raise _conflict("--cases", str(args.cases), s.cases, run_dir)
    if args.protocol is not None and args.protocol != s.protocol:
        raise _conflict("--protocol", args.protocol, s.protocol, run_dir)
    if experiment is not None:
        if experiment.protocol != s.protocol:
            raise _conflict("--experiment", f"protocol {experiment.protocol}", s.protocol, run_dir)
        key = _same_config(experiment.run, s.config)
        if key is not None:
            raise _conflict("--experiment", f"run.{key}: {experiment.run[key]!r}", s.config.get(key), run_dir)
        if not args.judge and experiment.judges and experiment.judges != s.judges:
            raise _conflict("--experiment", f"judges {experiment.judges}", s.judges, run_dir)
    if variants is not None and list(variants) != s.variants:
        flag = "--modes" if s.protocol == "board" else "--formats"
        raise _conflict(flag, ",".join(variants), ",".join(s.variants), run_dir)
    if specs is not None:
        if specs[0] != s.models[0]:
            raise _conflict("--model", specs[0], s.models[0], run_dir)
        if args.extra_model and specs[1:] != s.models[1:]:
            raise _conflict("--extra-model", specs[1:], s.models[1:], run_dir)
    if config_values:
        key = _same_config(config_values, s.config)
        if key is not None:
            raise _conflict(f"--config {args.config}" if args.config else "--config", f"{key}: "
                            f"{config_values[key]!r}", s.config.get(key), run_dir)
    simple = {"--concurrency": (args.concurrency, s.concurrency), "--limit": (args.limit, s.limit),
              "--judge": (args.judge or None, s.judges), "--judge-model": (args.judge_model, s.judge_model),
              "--scope": (args.scope, s.judge_scope),
              "--wall-limit": (args.wall_limit, s.config.get("wall_limit_s")),
              "--timeout": (args.timeout, s.config.get("timeout_s")),
              "--schema-dialect": (args.schema_dialect, s.model.schema_dialect),
              "--http-client": (args.http_client, s.model.http_client),
              "--max-concurrency": (args.max_concurrency, s.concurrency),
              "--max-attempts": (args.max_attempts, s.model.max_attempts),
              "--retry-base-delay": (args.retry_base_delay, s.model.retry_base_delay),
              "--cache-path": (str(args.cache_path) if args.cache_path else None, s.model.cache_path),
              "--no-cache": (True if args.no_cache else None, s.model.no_cache)}
    for flag, (given, kept) in simple.items():
        if given is not None and given != kept:
            raise _conflict(flag, given, kept, run_dir)
    if args.base_url is not None and redact_url(args.base_url) != (s.model.base_url or ""):
        raise _conflict("--base-url", redact_url(args.base_url), s.model.base_url, run_dir)
    if model_options is not None:  # what a --model-config file (with the flags beside it) says
        given = {"base_url": redact_url(model_options.base_url) if model_options.base_url else None,
                 "schema_dialect": model_options.schema_dialect, "http_client": model_options.http_client,
                 "timeout": model_options.timeout_s}
        for key, value in given.items():
            kept = getattr(s.model, key)
            if kept is not None and value != kept:
                raise _conflict(f"--model-config {args.model_config}", f"{key}: {value!r}", kept, run_dir)


def base_url_for_resume(args: argparse.Namespace, manifest: CohortManifest, env_url: str | None) -> str | None:
    """The server URL to resume with: the manifest's, or — when its credentials were masked — the
    flag's or the environment's, which must match it once masked."""
    kept = manifest.settings.model.base_url
    if kept is None or MASK not in kept:
        return kept
    for source in (args.base_url, env_url):
        if source and redact_url(source) == kept:
            return str(source)
    raise UserError(f"--base-url: the cohort's server URL {kept} held credentials, which are never stored; "
                    "give it again with --base-url (or $OPENAI_BASE_URL)")
