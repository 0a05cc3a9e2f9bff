"""Image files as data URLs for OpenAI-style image parts."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

from consilium.errors import UserError

__all__ = ["image_data_url"]


def image_data_url(path: str | Path) -> str:
    file = Path(path)
    mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    if not mime.startswith("image/"):
        raise UserError(f"{file}: not an image file ({mime})")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise UserError(f"{file}: cannot read the image ({exc.strerror})") from None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
