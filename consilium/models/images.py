"""Image files as data URLs for OpenAI-style image parts, and as content digests for the cache key."""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from pathlib import Path

from consilium.errors import UserError

__all__ = ["image_data_url", "image_digest"]


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except OSError as exc:
        raise UserError(f"{file}: cannot read the image ({exc.strerror})") from None


def image_data_url(path: str | Path) -> str:
    file = Path(path)
    mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    if not mime.startswith("image/"):
        raise UserError(f"{file}: not an image file ({mime})")
    return f"data:{mime};base64,{base64.b64encode(_read(file)).decode('ascii')}"


def image_digest(path: str | Path) -> str:
    """SHA-256 of the image's bytes: what reaches the model. Read on every call (no memo by file
    time: a file rewritten within the clock's granularity would keep a stale digest)."""
    return hashlib.sha256(_read(Path(path))).hexdigest()
