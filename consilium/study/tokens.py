"""Login tokens: random (``secrets.token_urlsafe(32)``, 256 bits), handed out once, stored as SHA-256 only.

A token's hash is compared in constant time (:func:`hmac.compare_digest`); a database holding the hashes
gives away no login. A rater's link is the studio's login path with the token in it (``/login/<token>``: in
the path, not a query, so the terminal's masking of ``?token=`` values does not hide it from the person it is
printed for; the server's access log names the path without it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["LINK_BASE", "hash_token", "link", "new_token", "same_hash"]

#: Where ``consilium serve`` listens by default (its ``--host``/``--port`` change it).
LINK_BASE = "http://127.0.0.1:8765"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_hash(token: str, stored: str) -> bool:
    return hmac.compare_digest(hash_token(token), stored)


def link(token: str, base: str = LINK_BASE) -> str:
    """A login link for ``token`` on the studio at ``base``."""
    return f"{base.rstrip('/')}/login/{token}"
