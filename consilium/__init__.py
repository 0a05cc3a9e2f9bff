"""consilium: simulate multidisciplinary clinical deliberation with LLM agents and measure it.

The library (docs/api.md): ``run`` / ``arun`` a protocol on a case, ``turn`` / ``aturn`` a Specialist Turn,
``judge`` / ``ajudge`` and ``replay`` / ``areplay`` a trace, ``run_cohort`` / ``arun_cohort`` a cohort,
``estimate_cohort`` / ``aestimate_cohort`` a cohort's calls, tokens and dollars before it runs, ``judge_run`` /
``ajudge_run`` a run folder, ``compare`` / ``acompare`` and ``report`` / ``areport`` a cohort, every other
command's function (``consilium.api``), ``load_case`` and ``read_trace``. They are loaded on first use, so
``import consilium`` stays light (the name is ``run_cohort``, not ``cohort``: that is the ``consilium.cohort``
package).
"""

from __future__ import annotations

from typing import Any

from consilium.api import __all__ as _api
from consilium.stages import set_declarations_loader
from consilium.version import __version__

__all__ = ["__version__", *_api]


def __getattr__(name: str) -> Any:
    if name in _api:
        from consilium import api

        return getattr(api, name)
    raise AttributeError(f"module 'consilium' has no attribute {name!r}")


def _declare_protocols() -> None:
    """Load every protocol, built-in and plugin, so that their declarations reach the lower layers that check
    them (a call's stage: consilium/stages.py); the root may import every layer, the models may not."""
    from consilium.graphs.registry import protocols

    protocols()


set_declarations_loader(_declare_protocols)
