"""``cohort --resume RUN_DIR``: the cohort's own study, and a refusal of any field given again that disagrees.

A resumed cohort takes everything from its manifest. A resume is the same study (consilium/spec/study.py): a
field given again must say the same thing (it may, so a scheduler can rerun the original command line with
``--resume`` added), but for those that may differ (``MAY_DIFFER``: concurrency, out, ray); one that says
otherwise is refused with one line naming its flag, before anything runs, since arms made under two settings
would be mixed in one table. Each field is held to what the cohort ran with (:data:`KEPT`, read from the
manifest's settings, so a cohort that took a default is held to that default), else to the spec the manifest
stores; a few are compared their own way (variants, the panel, files, the jury, the server URL).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from consilium.cohort.experiment import judge_specs
from consilium.cohort.protocols import split_settings
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol
from consilium.models.refs import parse_refs
from consilium.redact import MASK, redact_url
from consilium.spec.manifest import CohortManifest, CohortSettings
from consilium.spec.study import MAY_DIFFER, StudySpec, option_of

__all__ = ["KEPT", "base_url_for_resume", "refuse_changed_experiment", "refuse_conflicts", "url_given_again"]


def _conflict(flag: str, given: Any, kept: Any, run_dir: Path) -> UserError:
    return UserError(f"{flag}: {given!r} differs from the resumed cohort's {kept!r} ({run_dir}/manifest.json); "
                     "a resumed cohort keeps its settings (start a new cohort to change them)")


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


def _kept_any(manifest: CohortManifest, key: str) -> Any:
    """A run setting as the first protocol of the cohort that has it kept it."""
    s = manifest.settings
    return next((s.configs[n][key] for n in s.protocols if key in s.configs.get(n, {})), None)


def _first(key: str, default: Any = None) -> Callable[[CohortSettings], Any]:
    """A run setting every protocol has (``timeout_s``, ``wall_limit_s``), as the cohort's first protocol kept it."""
    return lambda s: s.configs.get(s.protocols[0], {}).get(key) or default


def _any(key: str) -> Callable[[CohortSettings], Any]:
    """A run setting as the first protocol of the cohort that has it kept it."""
    return lambda s: next((s.configs[n][key] for n in s.protocols if key in s.configs.get(n, {})), None)


def _model(key: str) -> Callable[[CohortSettings], Any]:
    return lambda s: getattr(s.model, key)


#: Spec field → what the cohort ran with, read from its settings (a field the cohort ran with its default for
#: is held to what that default was). A field not here is held to the spec the manifest stores, where it has one.
KEPT: dict[str, Callable[[CohortSettings], Any]] = {
    "cases": lambda s: s.cases, "limit": lambda s: s.limit, "sample": lambda s: s.sample.n if s.sample else None,
    "protocols": lambda s: s.protocols, "moderator": lambda s: s.moderator_model,
    "seed": _any("seed"), "temperature": _any("temperature"), "max_rounds": _any("max_rounds"),
    "wall_limit": _first("wall_limit_s"), "role_labels": _first("role_labels", "free"),
    "judges": lambda s: s.judges, "scope": lambda s: s.judge_scope, "judge_decoding": lambda s: s.judge_decoding,
    "schema_dialect": _model("schema_dialect"), "http_client": _model("http_client"),
    "token_param": _model("token_param"), "timeout": _first("timeout_s"), "max_attempts": _model("max_attempts"),
    "retry_base_delay": _model("retry_base_delay"), "cache_path": _model("cache_path"),
    "no_cache": _model("no_cache"), "shard": lambda s: s.shard,
}
#: How a given value is compared (the manifest keeps the cases' path absolute).
_GIVEN: dict[str, Callable[[Any], Any]] = {"cases": lambda v: str(Path(v).resolve()), "cache_path": str}
#: Compared their own way below, or by the experiment file's SHA-256 (the file's own fields).
_OWN_WAY = {"formats", "modes", "variants", "models", "config", "run", "judge_model", "base_url", "model_file",
            "replicates", "seeds", "omit_settings", "prices", "api_key_env", "own_options"}


def _shown(name: str, value: Any) -> Any:
    """A value as the message shows it: a protocol list as its flag takes it."""
    return ",".join(value) if name == "protocols" and isinstance(value, list) else value


def refuse_conflicts(given: StudySpec, manifest: CohortManifest, run_dir: Path, *, experiment: Any | None,
                     variants: dict[str, list[str]] | None, config_values: dict[str, Any] | None,
                     model_options: Any | None = None) -> None:
    """Raise a :class:`UserError` naming (by its flag) the first field of ``given`` that disagrees with the
    cohort. The caller parses what needs parsing (so a malformed file is reported as for a new cohort):
    ``experiment`` the file given again (consilium/cohort/study_sources.py ``Sourced``), ``variants`` the
    protocols whose variant flag was given, ``config_values`` a --config file's, ``model_options`` a
    --model-config file's."""
    s = manifest.settings
    refuse_changed_experiment(Path(experiment.given_path) if experiment is not None else None, manifest, run_dir)
    if experiment is not None:
        _refuse_experiment(experiment.experiment, given, manifest, run_dir)
    for name, value in given.given().items():
        if name in MAY_DIFFER or name in _OWN_WAY:
            continue
        if name in KEPT:
            kept = KEPT[name](s)
        elif manifest.spec is not None and name in manifest.spec.given():
            kept = getattr(manifest.spec, name)
        else:
            continue
        value = _GIVEN.get(name, lambda v: v)(value)
        if value != kept and not (name == "no_cache" and not value):
            raise _conflict(option_of(name).flag or name, _shown(name, value), _shown(name, kept), run_dir)
    for name, chosen in (variants or {}).items():
        if chosen != s.variants_of(name):
            raise _conflict(get_protocol(name).variant_flag, ",".join(chosen), ",".join(s.variants_of(name)), run_dir)
    if given.models is not None:
        if given.models[0] != s.models[0]:
            raise _conflict("--model", given.models[0], s.models[0], run_dir)
        if len(given.models) > 1 and given.models[1:] != s.models[1:]:
            raise _conflict("--extra-model", given.models[1:], s.models[1:], run_dir)
    if config_values:
        key = _same_configs(config_values, manifest)
        if key is not None:
            raise _conflict(f"--config {given.config}", f"{key}: {config_values[key]!r}", _kept_any(manifest, key),
                            run_dir)
    if given.judge_model is not None and not _same_jury(given.judge_model, _records(s)):
        raise _conflict("--judge-model", ", ".join(given.judge_model), _jury_kept(s), run_dir)
    if given.base_url is not None and redact_url(given.base_url) != (s.model.base_url or ""):
        raise _conflict("--base-url", redact_url(given.base_url), s.model.base_url, run_dir)
    if model_options is not None:  # what a --model-config file (with the flags beside it) says
        _refuse_model_file(given, model_options, s, run_dir)


def _refuse_experiment(file: Any, given: StudySpec, manifest: CohortManifest, run_dir: Path) -> None:
    """An experiment file given again must name the cohort's protocols, run settings and judges."""
    s = manifest.settings
    if file.protocols != s.protocols:
        raise _conflict("--experiment", f"protocol {','.join(file.protocols)}", ",".join(s.protocols), run_dir)
    key = _same_configs(file.run, manifest)
    if key is not None:
        raise _conflict("--experiment", f"run.{key}: {file.run[key]!r}", _kept_any(manifest, key), run_dir)
    if not given.judges and file.judges and file.judges != s.judges:
        raise _conflict("--experiment", f"judges {file.judges}", s.judges, run_dir)
    jury = ", ".join(judge_specs(file)) or None
    if given.judge_model is None and jury and not _same_jury(judge_specs(file), _records(s)):
        raise _conflict("--experiment", f"judge_model {jury}", _jury_kept(s), run_dir)


def _refuse_model_file(given: StudySpec, options: Any, s: CohortSettings, run_dir: Path) -> None:
    said = {"base_url": redact_url(options.base_url) if options.base_url else None,
            "schema_dialect": options.schema_dialect, "http_client": options.http_client,
            "timeout": options.timeout_s, "token_param": options.token_param, "prices": options.prices,
            "omit_settings": None if options.omit_settings is None else list(options.omit_settings)}
    for key, value in said.items():
        kept = getattr(s.model, key)
        if kept is not None and value != kept:
            raise _conflict(f"--model-config {given.model_file}", f"{key}: {value!r}", kept, run_dir)


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


def base_url_for_resume(given: str | None, manifest: CohortManifest, env_url: str | None) -> str | None:
    """The server URL to resume with: the manifest's, or — when its credentials were masked — the
    one given again or the environment's, which must match it once masked."""
    return url_given_again(manifest.settings.model.base_url, given, env_url, "the cohort's")


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
