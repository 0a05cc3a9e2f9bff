"""The package's version, on its own so that any module may name it without importing the public facade
(``consilium/__init__.py`` loads the whole library on first use of a name)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
