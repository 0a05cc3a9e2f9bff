"""Generation presets of the tumor board and the Specialist Turn: a named set of run settings that puts a run
where a paper's published numbers were made (docs/opentumorboard.md, "Generation presets").

``otb-paper`` is the OpenTumorBoard evaluation as its authors ran the open models (AnqiLi24/OpenTumorBoard
``evaluation/paper_configurations.json``: temperature 0.0, top_p 1.0, seed 0, max_tokens 65,536 for Board
Simulation and 8,192 for a caption-input Specialist Turn): the whole meeting in one call (board mode
``single``), no repair of a malformed response and no second try at a cut-off one, so each is recorded and
scored as the official code scores it (a cut-off transcript fails the format score at -1; a Specialist Turn
answer that breaks consilium's own answer schema is kept and judged on what the official extraction finds in it,
``schema_failure: record``). top_p 1.0 is what
every call sends (models/types.py GenerationSettings).

``otb-paper-reasoning`` is the same evaluation as its authors ran the open reasoning models there (Gemma 4 31B
IT, HuatuoGPT-3-32B, MedReason-8B and, through their API, DeepSeek-V4: temperature 0.6, top_p 1.0, seed 0, the
same budgets of 65,536 and 8,192 tokens). Their per-model exceptions are left to flags: HuatuoGPT-3-32B's board
budget of 32,768 (``--max-tokens 32768``), DeepSeek's API without a seed, an image-input turn's
16,384. The reasoning toggles the file names (``thinking``, ``reasoning.effort``) are the provider's, not a
generation setting: a model's own thinking is kept apart from its answer (models/reasoning.py).

A setting given beside the preset (a flag, a config file's key, an API keyword) overrides the preset's value; a
``max_tokens`` given for some stages keeps the preset's budget for the others. The preset's name is recorded in
the trace's config with the values it set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["PRESETS", "Preset", "PresetName", "preset_values"]

PresetName = Literal["otb-paper", "otb-paper-reasoning"]


@dataclass(frozen=True)
class Preset:
    """The board mode the preset runs and the run settings it sets (BoardConfig fields)."""

    mode: Literal["agents", "single"]
    settings: dict[str, Any] = field(default_factory=dict)


PRESETS: dict[str, Preset] = {
    "otb-paper": Preset(mode="single", settings={
        "temperature": 0.0, "seed": 0, "max_repairs": 0, "cut_off": "score", "schema_failure": "record",
        "max_tokens": {"board_single": 65536, "specialist_turn": 8192},
    }),
    # evaluation/paper_configurations.json, the entries whose model_key ends in _reasoning and MedReason-8B
    "otb-paper-reasoning": Preset(mode="single", settings={
        "temperature": 0.6, "seed": 0, "max_repairs": 0, "cut_off": "score", "schema_failure": "record",
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
