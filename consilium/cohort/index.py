"""``arms.jsonl`` as the index a resumed cohort reads instead of its traces.

Each line a cohort appends for an arm it ran carries the SHA-256 of the trace file as written
(``trace_sha256``) and a digest of what the trace must have been made with (``arm_settings``: the
case's content hash, the model spec, the run settings and the prompt files). On resume an arm whose
last line says ``completed``, names the trace at the arm's path, and whose file still hashes to that
digest under the same settings is reused from its line, without parsing or validating the trace;
any other arm falls back to reading its trace (docs/cohorts.md, "Resuming").
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["INDEX_FIELDS", "ArmIndex", "file_sha256", "settings_digest"]

#: Fields of an ``arms.jsonl`` line that are the index's own, kept out of ``arms.csv``.
INDEX_FIELDS = ("trace_sha256", "arm_settings")

ArmKey = tuple[str, str, str, int]  # case id, model spec, format (as arms.csv names it), replicate (-1: none)


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of a file's bytes, or None when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def settings_digest(settings: dict[str, Any], model_spec: str, case_hash: str) -> str:
    """What a reusable trace must have been made with, as 16 hex digits."""
    blob = json.dumps([settings, model_spec, case_hash], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _replicate(row: dict[str, Any]) -> int:
    """A line's replicate index (consilium/cohort/rows.py, ``row_key``); -1 for a cohort without replicates."""
    value = row.get("replicate")
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


class ArmIndex:
    """The last ``arms.jsonl`` line of each arm. A torn last line (a cohort killed mid-write) and a
    line without the index's fields (an older cohort's) are passed over: those arms read their traces."""

    def __init__(self, rows: dict[ArmKey, dict[str, Any]] | None = None) -> None:
        self.rows = rows or {}

    @classmethod
    def read(cls, path: Path) -> ArmIndex:
        rows: dict[ArmKey, dict[str, Any]] = {}
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)  # a symbolic link is no index (and append refuses it)
        except OSError:
            return cls()
        with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and all(isinstance(row.get(k), str) for k in
                                                 ("case_id", "model_spec", "format")):
                    rows[(row["case_id"], row["model_spec"], row["format"], _replicate(row))] = row
        return cls(rows)

    def reusable(self, key: ArmKey, trace: str, path: Path, settings: str) -> dict[str, Any] | None:
        """The arm's row if its trace at ``path`` (``trace`` relative to the run folder) is the one its
        line describes, complete and made under ``settings``; None: read the trace."""
        row = self.rows.get(key)
        if row is None or row.get("status") != "completed" or row.get("trace") != trace:
            return None
        if row.get("arm_settings") != settings or not row.get("trace_sha256"):
            return None
        if file_sha256(path) != row["trace_sha256"]:
            return None
        return {k: v for k, v in row.items() if k not in INDEX_FIELDS}
