"""consilium: simulate multidisciplinary clinical deliberation with LLM agents and measure it.

The library (docs/api.md): ``run`` / ``arun`` a protocol on a case, ``turn`` / ``aturn`` a Specialist Turn,
``judge`` / ``ajudge`` and ``replay`` / ``areplay`` a trace, ``load_case`` and ``read_trace``. They are loaded
on first use, so ``import consilium`` stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ReplayResult", "__version__", "ajudge", "areplay", "arun", "aturn", "judge", "load_case", "read_trace",
           "replay", "run", "turn"]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__ and name != "__version__":
        from consilium import api

        return getattr(api, name)
    raise AttributeError(f"module 'consilium' has no attribute {name!r}")
