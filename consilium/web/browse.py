"""Placeholder: the browse pages are being built (docs/studio-web.md)."""

from __future__ import annotations

from aiohttp import web


def register(app: web.Application) -> None:
    """No routes yet."""
