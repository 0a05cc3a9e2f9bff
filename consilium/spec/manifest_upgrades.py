"""How an older cohort manifest reads today: the version steps, and the settings a cohort recorded before
they existed, read as what that cohort ran (so a resumed or ablated cohort never mixes its arms' protocols)."""

from __future__ import annotations

from typing import Any

from consilium.traces.versions import Step

__all__ = ["MANIFEST_STEPS", "settings_before_their_fields"]


def _manifest_1_1(data: dict[str, Any]) -> dict[str, Any]:
    """1.1 → 1.2: a 1.1 cohort kept every trace of a model in one folder. A 1.1 cohort may also have
    started before the shared length budget or the open board discussion (both came with trace schema 1.3):
    its run settings then lack ``lengths`` / ``discussion`` and read as what it ran, ``legacy`` and
    ``alternating``, so a resumed cohort never mixes the protocols of its arms."""
    settings = data.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("config"), dict):
        config = dict(settings["config"])
        config.setdefault("discussion" if settings.get("protocol") == "board" else "lengths",
                          "alternating" if settings.get("protocol") == "board" else "legacy")
        data = {**data, "settings": {**settings, "config": config}}
    return {**data, "schema_version": "1.2", "layout": "flat"}


def _manifest_1_2(data: dict[str, Any]) -> dict[str, Any]:
    """1.2 → 1.3: a 1.2 cohort ran one protocol; its run settings are that protocol's."""
    settings = data.get("settings")
    if isinstance(settings, dict) and "protocol" in settings:
        rest = {k: v for k, v in settings.items() if k not in ("protocol", "config")}
        name = settings["protocol"]
        settings = {**rest, "protocols": [name], "configs": {name: settings.get("config")}}
        data = {**data, "settings": settings}
    return {**data, "schema_version": "1.3"}


def _manifest_1_3(data: dict[str, Any]) -> dict[str, Any]:
    """1.3 → 1.4: a 1.3 cohort kept no study spec; its resume holds each field to the settings it ran with."""
    return {**data, "schema_version": "1.4", "spec": None, "spec_hash": None}


MANIFEST_STEPS: dict[str, tuple[str, Step]] = {"1.1": ("1.2", _manifest_1_1), "1.2": ("1.3", _manifest_1_2),
                                               "1.3": ("1.4", _manifest_1_3)}


def _judge_decoding(settings: dict[str, Any]) -> dict[str, Any]:
    """No ``judge_decoding`` key (a null is kept: the backend's default): written before the setting existed,
    by judges that all asked the paper's way (schema-free attempts first)."""
    return {"judge_decoding": "paper", **settings}


def _board_floor(settings: dict[str, Any]) -> dict[str, Any]:
    """A board config without ``floor_schema``: started before board traces recorded their open floor's
    moderator schema (trace schema 1.6), so it ran the flat one, as its traces read; a resumed cohort then
    asks as its finished arms did and keeps them."""
    configs = settings.get("configs")
    board = configs.get("board") if isinstance(configs, dict) else None
    if not isinstance(configs, dict) or not isinstance(board, dict) or "floor_schema" in board:
        return settings
    return {**settings, "configs": {**configs, "board": {**board, "floor_schema": "flat"}}}


def settings_before_their_fields(data: dict[str, Any]) -> dict[str, Any]:
    """An upgraded manifest with each setting it predates read as what the cohort ran."""
    settings = data.get("settings")
    if not isinstance(settings, dict):
        return data
    return {**data, "settings": _board_floor(_judge_decoding(settings))}
