"""A data file's text, gzip or not: ``NAME.gz`` is decompressed, so every reader takes the files as they
ship (OpenTumorBoard's released ``data/*.jsonl.gz``, a compressed AgentClinic or table export).

Errors are the ones :meth:`pathlib.Path.read_text` raises, so each caller keeps its own message: a
missing file is :class:`FileNotFoundError`, text that is not UTF-8 :class:`UnicodeDecodeError`, and a
damaged or truncated gzip an :class:`OSError` saying so.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

__all__ = ["read_text", "unpacked_suffix"]


def read_text(path: Path) -> str:
    if path.suffix.lower() != ".gz":
        return path.read_text(encoding="utf-8")
    try:
        data = gzip.decompress(path.read_bytes())
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise OSError(f"not a complete gzip file ({exc})") from None
    return data.decode("utf-8")


def unpacked_suffix(path: Path) -> str:
    """The suffix that says the format: ``.jsonl`` for ``a.jsonl`` and for ``a.jsonl.gz``."""
    return Path(path.name[:-3]).suffix if path.suffix.lower() == ".gz" else path.suffix
