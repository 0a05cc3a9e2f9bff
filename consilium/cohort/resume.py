"""``cohort --resume RUN_DIR``: the cohort's own settings, and a refusal of any flag that disagrees.

A resumed cohort takes everything from its manifest. A flag given again must say the same thing
(it may, so a scheduler can rerun the original command line with ``--resume`` added); a flag that
says otherwise is refused with one line naming it, before anything runs, since arms made under two
settings would be mixed in one table.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Any

from consilium.cohort.experiment import judge_specs
from consilium.cohort.protocols import split_settings
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol
from consilium.models.refs import parse_refs
from consilium.redact import MASK, redact_url
from consilium.spec.manifest import CohortManifest

__all__ = ["base_url_for_resume", "refuse_changed_experiment", "refuse_conflicts", "url_given_again"]


def _conflict(flag: str, given: Any, kept: Any, run_dir: Path) -> UserError:
    return UserError(f"{flag}: {given!r} differs from the resumed cohort's {kept!r} ({run_dir}/manifest.json); "
                     "a resumed cohort keeps its settings (start a new cohort to change them)")


def _jury_given(args: Any) -> str | None:
    """The judges ``--judge-model`` names (one, or each of a jury, in order), to hold against the manifest's
    judge and jury: a changed, added or dropped judge of a jury is a changed setting."""
    if args.judge_model is None:
        return None
    return ", ".join([args.judge_model, *getattr(args, "jury_models", [])])


def _records(s: Any) -> list[str]:
    return [s.judge_model, *s.jury_models] if s.judge_model else []


def _jury_kept(s: Any) -> str | None:
    return ", ".join(_records(s)) or None


def _same_jury(given: list[str], kept: list[str]) -> bool:
    """Whether two juries (each judge's record, in order) are the same judges in the same order: the same
    records, or records naming the same judges (consilium/models/refs.py: a judge is its spec and its server;
    its key's variable is how it is reached, and may change between runs)."""
    if given == kept or not given or not kept:
        return given == kept
    try:
        return [r.name for r in parse_refs(given)] == [r.name for r in parse_refs(kept)]
    except UserError:  # a record that no longer parses (a config file gone): not the same; the plan says why
        return False


def _same_config(values: dict[str, Any], kept: dict[str, Any]) -> str | None:
    """The first run setting in ``values`` that differs from the cohort's (one protocol's), if any."""
    for key, value in values.items():
        old = kept.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            if any(old.get(k) != v for k, v in value.items()):
                return key
        elif old != value:
            return key
    return None


def _same_configs(values: dict[str, Any], manifest: CohortManifest) -> str | None:
    """The first run setting in ``values`` (one mapping for every protocol) that differs from the setting
    of a protocol of the cohort that has it, if any."""
    s = manifest.settings
    for name, share in split_settings(values, s.protocols, "").items():
        key = _same_config(share, s.configs.get(name, {}))
        if key is not None:
            return key
    return None


def _kept(manifest: CohortManifest, key: str) -> Any:
    """A run setting every protocol has (``timeout_s``, ``wall_limit_s``), as the cohort kept it."""
    s = manifest.settings
    return s.configs.get(s.protocols[0], {}).get(key)


def _kept_any(manifest: CohortManifest, key: str) -> Any:
    """A run setting as the first protocol of the cohort that has it kept it."""
    s = manifest.settings
    return next((s.configs[n][key] for n in s.protocols if key in s.configs.get(n, {})), None)


def refuse_conflicts(args: argparse.Namespace, manifest: CohortManifest, run_dir: Path, *,
                     protocols: list[str] | None, variants: dict[str, list[str]] | None, specs: list[str] | None,
                     experiment: Any | None, config_values: dict[str, Any] | None,
                     model_options: Any | None = None, moderator: str | None = None) -> None:
    """Raise a :class:`UserError` naming the first flag given on the command line that disagrees with
    the manifest. The caller parses the flags (so a malformed one is reported as for a new cohort);
    ``variants`` holds the protocols whose variant flag was given, ``config_values`` a --config file's."""
    s = manifest.settings
    refuse_changed_experiment(args.experiment, manifest, run_dir)
    if args.out is not None and Path(args.out).resolve() != run_dir.resolve().parent:
        raise _conflict("--out", str(args.out), str(run_dir.resolve().parent), run_dir)
    if args.cases is not None and str(Path(args.cases).resolve()) != s.cases:
        raise _conflict("--cases", str(args.cases), s.cases, run_dir)
    if protocols is not None and protocols != s.protocols:
        raise _conflict("--protocol", ",".join(protocols), ",".join(s.protocols), run_dir)
    if experiment is not None:
        if experiment.protocols != s.protocols:
            raise _conflict("--experiment", f"protocol {','.join(experiment.protocols)}", ",".join(s.protocols),
                            run_dir)
        key = _same_configs(experiment.run, manifest)
        if key is not None:
            raise _conflict("--experiment", f"run.{key}: {experiment.run[key]!r}", _kept_any(manifest, key), run_dir)
        if not args.judge and experiment.judges and experiment.judges != s.judges:
            raise _conflict("--experiment", f"judges {experiment.judges}", s.judges, run_dir)
        jury = ", ".join(judge_specs(experiment)) or None
        if args.judge_model is None and jury and not _same_jury(judge_specs(experiment), _records(s)):
            raise _conflict("--experiment", f"judge_model {jury}", _jury_kept(s), run_dir)
    for name, chosen in (variants or {}).items():
        if chosen != s.variants_of(name):
            raise _conflict(get_protocol(name).variant_flag, ",".join(chosen), ",".join(s.variants_of(name)), run_dir)
    if specs is not None:
        if specs[0] != s.models[0]:
            raise _conflict("--model", specs[0], s.models[0], run_dir)
        if args.extra_model and specs[1:] != s.models[1:]:
            raise _conflict("--extra-model", specs[1:], s.models[1:], run_dir)
    if config_values:
        key = _same_configs(config_values, manifest)
        if key is not None:
            raise _conflict(f"--config {args.config}" if args.config else "--config", f"{key}: "
                            f"{config_values[key]!r}", _kept_any(manifest, key), run_dir)
    simple = {"--concurrency": (args.concurrency, s.concurrency), "--limit": (args.limit, s.limit),
              "--sample": (getattr(args, "sample", None), s.sample.n if s.sample else None),
              "--judge": (args.judge or None, s.judges),
              "--scope": (args.scope, s.judge_scope),
              "--judge-decoding": (getattr(args, "judge_decoding", None), s.judge_decoding),
              "--wall-limit": (args.wall_limit, _kept(manifest, "wall_limit_s")),
              "--timeout": (args.timeout, _kept(manifest, "timeout_s")),
              "--moderator-model": (moderator, s.moderator_model),
              **{flag: (getattr(args, dest, None), _kept_any(manifest, dest))
                 for flag, dest in (("--seed", "seed"), ("--temperature", "temperature"),
                                    ("--max-rounds", "max_rounds"))},
              "--role-labels": (getattr(args, "role_labels", None), _kept(manifest, "role_labels") or "free"),
              "--schema-dialect": (args.schema_dialect, s.model.schema_dialect),
              "--http-client": (args.http_client, s.model.http_client),
              "--token-param": (getattr(args, "token_param", None), s.model.token_param),
              "--max-attempts": (args.max_attempts, s.model.max_attempts),
              "--retry-base-delay": (args.retry_base_delay, s.model.retry_base_delay),
              "--cache-path": (str(args.cache_path) if args.cache_path else None, s.model.cache_path),
              "--no-cache": (True if args.no_cache else None, s.model.no_cache)}
    for flag, (given, kept) in simple.items():
        if given is not None and given != kept:
            raise _conflict(flag, given, kept, run_dir)
    if args.judge_model is not None and not _same_jury([args.judge_model, *getattr(args, "jury_models", [])],
                                                       _records(s)):
        raise _conflict("--judge-model", _jury_given(args), _jury_kept(s), run_dir)
    if args.base_url is not None and redact_url(args.base_url) != (s.model.base_url or ""):
        raise _conflict("--base-url", redact_url(args.base_url), s.model.base_url, run_dir)
    if model_options is not None:  # what a --model-config file (with the flags beside it) says
        given = {"base_url": redact_url(model_options.base_url) if model_options.base_url else None,
                 "schema_dialect": model_options.schema_dialect, "http_client": model_options.http_client,
                 "timeout": model_options.timeout_s, "token_param": model_options.token_param,
                 "prices": model_options.prices,
                 "omit_settings": None if model_options.omit_settings is None else list(model_options.omit_settings)}
        for key, value in given.items():
            kept = getattr(s.model, key)
            if kept is not None and value != kept:
                raise _conflict(f"--model-config {args.model_config}", f"{key}: {value!r}", kept, run_dir)


def refuse_changed_experiment(given: Path | None, manifest: CohortManifest, run_dir: Path) -> None:
    """Refuse an experiment file that changed since the cohort started: the one given again (``--experiment``),
    else the file the manifest names, while it is there. The manifest holds what the file said, so a file
    gone since is no obstacle."""
    record = manifest.settings.experiment
    if record is None:
        return
    path = given if given is not None else Path(record.path)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        if given is None:
            return
        raise UserError(f"--experiment: {given}: not found") from None
    except OSError as exc:
        raise UserError(f"--experiment: {path}: cannot read it ({exc.strerror or exc})") from None
    if digest != record.sha256:
        raise UserError(f"--experiment: {path}: changed since the cohort started (sha256 {digest[:12]}…, the "
                        f"manifest records {record.sha256[:12]}… in {run_dir}/manifest.json); a resumed cohort "
                        "runs the experiment it started with: restore the file, or start a new cohort")


def base_url_for_resume(args: argparse.Namespace, manifest: CohortManifest, env_url: str | None) -> str | None:
    """The server URL to resume with: the manifest's, or — when its credentials were masked — the
    flag's or the environment's, which must match it once masked."""
    return url_given_again(manifest.settings.model.base_url, args.base_url, env_url, "the cohort's")


def url_given_again(kept: str | None, given: str | None, env_url: str | None, whose: str) -> str | None:
    """The server URL a resumed run sends to: the one it kept (``whose`` it is, in the message), or — when its
    credentials were masked before it was stored — the flag's or the environment's, which must match it once
    masked: credentials come from the user again, never from a file."""
    if kept is None or MASK not in kept:
        return kept
    for source in (given, env_url):
        if source and redact_url(source) == kept:
            return str(source)
    raise UserError(f"--base-url: {whose} server URL {kept} held credentials, which are never stored; "
                    "give it again with --base-url (or $OPENAI_BASE_URL)")
