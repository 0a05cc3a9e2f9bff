"""Generation presets of the tumor board and the Specialist Turn: a named set of run settings that puts a run
where a paper's published numbers were made (docs/opentumorboard.md, "Generation presets").

``otb-paper`` is the OpenTumorBoard evaluation as its authors ran the open models (AnqiLi24/OpenTumorBoard
``evaluation/paper_configurations.json``: temperature 0.0, top_p 1.0, seed 0, max_tokens 65,536 for Board
Simulation and 8,192 for a caption-input Specialist Turn): the whole meeting in one call (board mode
``single``), no repair of a malformed response and no second try at a cut-off one, so each is recorded and
scored as the official code scores it (a cut-off transcript fails the format score at -1). top_p 1.0 is what
every call sends (models/types.py GenerationSettings).

A setting given beside the preset (a flag, a config file's key, an API keyword) overrides the preset's value; a
``max_tokens`` given for some stages keeps the preset's budget for the others. The preset's name is recorded in
the trace's config with the values it set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["PRESETS", "Preset", "PresetName", "preset_values"]

PresetName = Literal["otb-paper"]


@dataclass(frozen=True)
class Preset:
    """The board mode the preset runs and the run settings it sets (BoardConfig fields)."""

    mode: Literal["agents", "single"]
    settings: dict[str, Any] = field(default_factory=dict)


PRESETS: dict[str, Preset] = {
    "otb-paper": Preset(mode="single", settings={
        "temperature": 0.0, "seed": 0, "max_repairs": 0, "cut_off": "score",
        "max_tokens": {"board_single": 65536, "specialist_turn": 8192},
    }),
}


def preset_values(data: dict[str, Any], stage_tokens: dict[str, int]) -> dict[str, Any]:
    """Run settings ``data`` (a config's fields by name) with its preset's values under every setting it does not
    give, ``max_tokens`` stage by stage over ``stage_tokens`` (the protocol's defaults); ``data`` itself when it
    names no preset (an unknown name is left for the field to refuse)."""
    preset = PRESETS.get(str(data.get("preset")))
    if preset is None:
        return data
    given_tokens = data.get("max_tokens", {})
    if not isinstance(given_tokens, dict):
        return {**preset.settings, **data}  # not a mapping: for the field to refuse
    return {**preset.settings, **data,
            "max_tokens": {**stage_tokens, **preset.settings.get("max_tokens", {}), **given_tokens}}
