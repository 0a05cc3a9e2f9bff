"""Trace files: atomic writes and the run manifest (the reader asks the protocols: consilium/graphs/registry.py), placed
by the run folder's names (consilium/runfolder/layout.py)."""

from __future__ import annotations

import secrets
import subprocess
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from consilium.fileio import write_json_atomic, write_text_atomic
from consilium.runfolder.layout import MANIFEST, trace_name
from consilium.traces.schema import TraceBase

__all__ = ["new_run_id", "package_versions", "trace_path", "write_manifest", "write_trace"]


def new_run_id(case_id: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{case_id[:40]}-{secrets.token_hex(3)}"


def trace_path(out_dir: Path, run_id: str, case_id: str, fmt: str) -> Path:
    return out_dir / run_id / trace_name(case_id, fmt)


def write_trace(path: Path, trace: TraceBase) -> Path:
    return write_text_atomic(path, trace.model_dump_json(indent=2) + "\n")


def package_versions() -> dict[str, str]:
    """Versions of the packages a run depends on (looked up once per process: the lookup is slow)."""
    return dict(_package_versions())


@cache
def _package_versions() -> dict[str, str]:
    versions = {}
    for name in ("consilium", "langgraph", "langchain-core", "openai", "pydantic", "llama-cpp-python"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def _git_revision() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def write_manifest(run_dir: Path, *, run_id: str, command: list[str], config: dict[str, Any],
                   traces: list[Path], seed: int) -> Path:
    manifest = {
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(),
        "command": command,
        "config": config,
        "seed": seed,
        "git_revision": _git_revision(),
        "versions": package_versions(),
        "traces": [p.name for p in traces],
    }
    return write_json_atomic(run_dir / MANIFEST, manifest)
